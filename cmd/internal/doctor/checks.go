package doctor

// check is one check of doctor's: its name (on each finding, and in the
// report's "checked" line) and its steps, each run in its phase: early
// (before the store's lock; the admin dirs first, with no git, since a
// FIFO there would hang git), inStore (under the store's read lock, with
// s.tx), late (outside it: a walk of objects, the network). applies, when
// set, says whether the check runs in this repository.
type check struct {
	name    string
	early   func(*scope)
	inStore func(*scope)
	late    func(*scope)
	applies func(*scope) bool
}

// checks is the table: to add a check, write its file (check_NAME.go)
// with its steps and a unit test, and add it here.
var checks = []check{
	{name: "admin", early: checkAdminDirs},                          // check_admin.go
	{name: "store", inStore: checkStore},                            // check_store.go
	{name: "hooks", early: checkHooks},                              // check_hooks.go
	{name: "leases", inStore: checkLeases},                          // check_leases.go
	{name: "views", inStore: checkViews},                            // check_views.go
	{name: "registrations", inStore: checkRegistrations},            // check_registrations.go
	{name: "prune", inStore: checkPrunable},                         // check_prune.go
	{name: "journals", inStore: checkJournals},                      // check_journals.go
	{name: "publication", inStore: checkPublication},                // check_publication.go
	{name: "gates", early: readInventory, inStore: checkGates},      // check_gates.go
	{name: "objects", inStore: governedHistory, late: checkObjects}, // check_objects.go
	{name: "refs", early: checkRefLocks, late: checkLeftovers},      // check_refs.go
	{name: "audit", late: checkAudit},                               // check_audit.go
	{name: "fleet", late: checkFleet, applies: fleetOn},             // check_fleet.go
}
