// Package hookspec is the one table of the client hooks wt installs and
// judges: their names and the arguments git passes each.
package hookspec

// Form is one client hook wt installs and judges: its name, the arguments
// git passes it (Args, named by ArgsUsage), and what a call with another
// number of them is told. Client is the one table the installer
// (install.Hooks), the judge (cmd/internal/gate) and wt-hook's command
// line read.
type Form struct {
	Name      string
	Args      int
	ArgsUsage string
	Usage     string
}

// Client are the client hooks wt installs, in the order it installs
// them. post-checkout came with shim v3: git before 2.46 does not show a
// branch switch to reference-transaction, so it is reported after the fact.
var Client = []Form{
	{Name: "pre-commit", Args: 0, Usage: "run pre-commit takes no arguments"},
	{Name: "pre-push", Args: 2, ArgsUsage: "REMOTE URL", Usage: "run pre-push takes REMOTE and URL, as git passes them"},
	{Name: "reference-transaction", Args: 1, ArgsUsage: "STATE", Usage: "run reference-transaction takes the transaction's STATE"},
	{Name: "post-checkout", Args: 3, ArgsUsage: "PREV NEW FLAG", Usage: "run post-checkout takes PREV, NEW and FLAG, as git passes them"},
}

// FormOf is the client hook named name, and whether wt has one.
func FormOf(name string) (Form, bool) {
	for _, f := range Client {
		if f.Name == name {
			return f, true
		}
	}
	return Form{}, false
}
