package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/gitrepo"
	"github.com/wt-tool/wt/core/safefile"
	"github.com/wt-tool/wt/core/shell"
)

// wt-exec checks, before every launch into a governed worktree, that a
// commit there meets wt's gate, and repairs it or refuses (HOOKS_MISSING)
// when not: an agent must not start where the gate is off. Asking git
// takes git processes (its version, its configuration, where it finds
// hooks): 1.5 ms and more here, against wt-exec's own 4 ms. So the answer
// is kept, once found gated, with a fingerprint of everything it was read
// from: the identity of the git on PATH, the environment variables that
// change git's configuration, and every file git's configuration and
// hooks came from (the system, global, repository and worktree config
// files, the files they include, wt's shims, the hooks dir's hooks). A
// launch that finds every one of those unchanged (stat: size, times,
// inode) reuses the answer (25 µs here, BenchmarkGateKept); any change
// asks git again. Only a gated answer is kept. The record lives in wt's
// gate dir in the common dir, which a confined agent cannot write.

// checkFile is where the answer for worktree key is kept.
func checkFile(common, key string) string {
	return filepath.Join(ConfigDir(common), "checked-"+key)
}

// stampOf is one file's identity as stat(2) gives it: device, inode,
// size, change and modification times ("" when absent).
func stampOf(p string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return ""
	}
	b := make([]byte, 0, 64)
	for i, n := range []int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec} {
		if i > 0 {
			b = append(b, ':')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(b)
}

// The kept answer is fields separated by NUL (which no path holds):
// checkMagic, the environment's fingerprint, what gates the hook, then a
// path and its stamp for every watched file. It is read on every launch,
// so it is not JSON (whose decoding was half of the check's cost).
const checkMagic = "wt-gate-check 1"

// configEnv are the variables that change what configuration git reads.
var configEnv = []string{"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
	"GIT_CONFIG_SYSTEM", "HOME", "XDG_CONFIG_HOME", "PATH"}

// envPrint fingerprints those variables (and GIT_CONFIG_KEY_n/VALUE_n).
func envPrint() string {
	h := sha256.New()
	var kv []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if slices.Contains(configEnv, k) || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			kv = append(kv, e)
		}
	}
	slices.Sort(kv)
	for _, e := range kv {
		h.Write([]byte(e))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// watched are the files an answer for the checkout depends on.
func watched(c gitrepo.Checkout, m Meets, entries []gitrepo.ConfigEntry) []string {
	files := []string{filepath.Join(c.CommonDir, "config"), filepath.Join(c.GitDir, "config.worktree"),
		filepath.Join(c.CommonDir, "config.worktree"), "/etc/gitconfig"}
	if git, err := exec.LookPath("git"); err == nil {
		files = append(files, git, filepath.Join(filepath.Dir(filepath.Dir(git)), "etc", "gitconfig"))
	}
	home := os.Getenv("HOME")
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, p := range []string{os.Getenv("GIT_CONFIG_GLOBAL"), os.Getenv("GIT_CONFIG_SYSTEM")} {
		if p != "" {
			files = append(files, p)
		}
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	for _, e := range entries {
		if p, ok := strings.CutPrefix(e.Origin, "file:"); ok {
			if !filepath.IsAbs(p) {
				p = filepath.Join(c.TopLevel, p)
			}
			files = append(files, p)
		}
	}
	// The hooks wt's own dir forwards to (their forwarders follow them).
	if chain, ok := ownChain(c.CommonDir); ok {
		for _, h := range ForwardHooks {
			files = append(files, filepath.Join(chain, h))
		}
	}
	// Files only: a directory's times change with every file made in it
	// (this record's own among them); each file that matters is here by
	// its path, and appears, goes or changes with its stamp.
	for _, h := range Hooks {
		files = append(files, filepath.Join(m.HooksDir, h), filepath.Join(m.HooksDir, h+".legacy"), filepath.Join(m.HooksDir, h+ChainSuffix),
			filepath.Join(ConfigDir(c.CommonDir), h), filepath.Join(OwnDir(c.CommonDir), h))
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// keptAnswer returns the kept answer for c when nothing it was read from
// changed.
func keptAnswer(c gitrepo.Checkout) (string, bool) { return kept(c, true) }

// kept is keptAnswer; with env false, whatever this process's environment
// (a view's answer: what wt-exec found for its launches).
func kept(c gitrepo.Checkout, env bool) (string, bool) {
	b, err := safefile.Read(checkFile(c.CommonDir, c.Key), 1<<20, safefile.NoFollow)
	if err != nil {
		return "", false
	}
	f := strings.Split(string(b), "\x00")
	if len(f) < 5 || len(f)%2 == 0 || f[0] != checkMagic || env && f[1] != envPrint() {
		return "", false
	}
	for i := 3; i < len(f); i += 2 {
		if stampOf(f[i]) != f[i+1] {
			return "", false
		}
	}
	return f[2], true
}

func keepAnswer(c gitrepo.Checkout, m Meets, entries []gitrepo.ConfigEntry, by string) {
	if strings.Contains(by, "\x00") {
		return
	}
	f := []string{checkMagic, envPrint(), by}
	for _, p := range watched(c, m, entries) {
		f = append(f, p, stampOf(p))
	}
	if os.MkdirAll(ConfigDir(c.CommonDir), 0o755) != nil {
		return
	}
	_ = safefile.Replace(checkFile(c.CommonDir, c.Key), []byte(strings.Join(f, "\x00")), 0o644) // Best effort: the next launch asks git again.
}

// GateState is what a commit in checkout c meets, for a view (status):
// the answer wt-exec or allocate kept, when none of the files it was read
// from changed since; else git's answer now, which is kept when gated. by
// names what gates reference-transaction there; "" when nothing does, and
// then why says why (a per-worktree core.hooksPath among the causes).
func GateState(ctx context.Context, c gitrepo.Checkout) (by, why, fix string, err error) {
	if by, ok := kept(c, false); ok {
		return by, "", "", nil
	}
	m, entries, err := probeEntries(ctx, c.TopLevel, c.CommonDir)
	if err != nil {
		return "", "", "", err
	}
	const hook = "reference-transaction"
	if !m.Gated(hook) {
		return "", m.Why(hook), m.Fix(hook, c.TopLevel), nil
	}
	by = gatedBy(m, hook)
	keepAnswer(c, m, entries, by)
	return by, "", "", nil
}

// GateCheck is what CheckWorktree found.
type GateCheck struct {
	// By is what gates reference-transaction there.
	By string
	// Repaired says what was off and is now in place ("" when nothing).
	Repaired string
	// Meets is git's answer, when git was asked.
	Meets *Meets
	// Copied says what hook manager's dir was copied into the worktree.
	Copied string
	// Off says why commits meet no gate in a repository whose gate the
	// operator switched off (SwitchedOff): the launch goes on, saying so.
	Off string
}

// offFile marks a repository whose operator switched wt's gate off.
func offFile(common string) string { return filepath.Join(ConfigDir(common), "switched-off") }

// SwitchedOff reports whether the operator switched wt's gate off in the
// repository with common dir common (wt-admin init --no-hooks, wt-hook
// uninstall): wt-exec then does not put it back, and says it is off.
func SwitchedOff(common string) bool {
	_, err := os.Lstat(offFile(common))
	return err == nil
}

// SwitchOff records that the operator switched the gate off; SwitchOn
// that it is wanted again.
func SwitchOff(common string) error {
	if err := os.MkdirAll(ConfigDir(common), 0o755); err != nil {
		return decision.SayWrap(decision.Internal, err, "create", ConfigDir(common))
	}
	return writeFile(offFile(common), "wt's gate was switched off here (wt-admin init --no-hooks, or wt-hook uninstall); wt-hook install puts it back\n", 0o644)
}

// SwitchOn removes SwitchOff's mark.
func SwitchOn(common string) error {
	if err := os.Remove(offFile(common)); err != nil && !os.IsNotExist(err) {
		return decision.SayWrap(decision.Internal, err, "remove", offFile(common))
	}
	return nil
}

// CheckWorktree checks that a commit in checkout c, from a process with
// this process's environment, meets wt's reference-transaction gate; when
// it does not, it installs the gate (recording the wt-hook binary bin
// gives) and checks again. A gate that is still off is HOOKS_MISSING,
// naming why and the fix.
func CheckWorktree(ctx context.Context, c gitrepo.Checkout, bin func() (string, error)) (GateCheck, error) {
	if by, ok := keptAnswer(c); ok {
		return GateCheck{By: by}, nil
	}
	m, entries, err := probeEntries(ctx, c.TopLevel, c.CommonDir)
	if err != nil {
		return GateCheck{}, err
	}
	// A worktree made before a hook manager generated its hooks dir in
	// the main checkout has none: copied, the manager's hooks run here too.
	g := &gitrepo.Repo{CommonDir: c.CommonDir, GitDir: c.GitDir, TopLevel: c.TopLevel}
	copied, _ := copyManagerDir(ctx, g, c.TopLevel) // Best effort: the gate does not depend on it.
	// wt's own dir forwards the hooks the chained dir has now (a manager
	// may have added one since).
	if raw, _, err := readChain(OwnDir(c.CommonDir)); err == nil && raw != "" {
		_ = syncForwarders(OwnDir(c.CommonDir), raw) // Best effort: as above.
	}
	const hook = "reference-transaction"
	if m.Gated(hook) {
		by := gatedBy(m, hook)
		keepAnswer(c, m, entries, by)
		return GateCheck{By: by, Meets: &m, Copied: copied}, nil
	}
	why := m.Why(hook)
	if SwitchedOff(c.CommonDir) {
		// The operator switched the gate off (wt-admin init --no-hooks,
		// wt-hook uninstall): said, not undone.
		return GateCheck{Meets: &m, Copied: copied, Off: why}, nil
	}
	b, err := bin()
	if err != nil {
		return GateCheck{Meets: &m}, gateOff(c, m, why)
	}
	if _, _, err := EnsureGate(ctx, g, b); err != nil {
		return GateCheck{Meets: &m}, gateOff(c, m, why+"; installing it failed: "+err.Error())
	}
	if err := clearWorktreeSwitches(ctx, c, entries); err != nil {
		return GateCheck{Meets: &m}, gateOff(c, m, why+"; "+err.Error())
	}
	m2, entries, err := probeEntries(ctx, c.TopLevel, c.CommonDir)
	if err != nil {
		return GateCheck{}, err
	}
	if !m2.Gated(hook) {
		return GateCheck{Meets: &m2}, gateOff(c, m2, m2.Why(hook))
	}
	by := gatedBy(m2, hook)
	keepAnswer(c, m2, entries, by)
	return GateCheck{By: by, Repaired: why, Meets: &m2, Copied: copied}, nil
}

// clearWorktreeSwitches removes from the worktree's own config
// (config.worktree) the settings that switch wt's configured hooks off
// (hook.wt-HOOK.enabled): they name wt's hooks and nobody else's. It
// writes the file in the worktree's admin dir by its path, never through
// the checkout's .git file. A setting that switches a whole event off
// (hook.HOOK.enabled) switches off others' hooks too, and is left to the
// person (the refusal names it).
func clearWorktreeSwitches(ctx context.Context, c gitrepo.Checkout, entries []gitrepo.ConfigEntry) error {
	file := filepath.Join(c.GitDir, "config.worktree")
	for _, e := range entries {
		if e.Scope != "worktree" || !strings.HasPrefix(e.Key, "hook.wt-") || !strings.HasSuffix(e.Key, ".enabled") {
			continue
		}
		g := &gitrepo.Repo{CommonDir: c.CommonDir, GitDir: c.GitDir, TopLevel: c.CommonDir}
		if _, err := g.Git(ctx, false, "config", "--file", file, "--unset-all", e.Key); err != nil {
			return fmt.Errorf("remove %s from %s: %w", e.Key, file, err)
		}
	}
	return nil
}

func gatedBy(m Meets, hook string) string {
	for _, h := range m.Hooks {
		if h.Hook == hook && len(h.By) > 0 {
			return h.By[0]
		}
	}
	return ""
}

// gateOff is the refusal of a launch into checkout c, whose gate is off.
func gateOff(c gitrepo.Checkout, m Meets, why string) error {
	d := decision.Say(decision.HooksMissing, "commits-meet", c.TopLevel, m.Git, why).
		WithFact("worktree_path", c.TopLevel)
	envOff := m.HooksPathScope == "command" && !m.Git.ConfigHooks()
	for _, h := range m.Hooks {
		envOff = envOff || h.Hook == "reference-transaction" && h.SwitchScope == "command"
	}
	if envOff {
		return d.WithHint("this environment switches git's hooks off for every git the command would start (GIT_CONFIG_PARAMETERS or GIT_CONFIG_COUNT): launch without it, e.g. env -u GIT_CONFIG_PARAMETERS -u GIT_CONFIG_COUNT wt-exec -C %s -- COMMAND", shell.Word(c.TopLevel))
	}
	return d.WithHint("%s", m.Fix("reference-transaction", c.TopLevel))
}

// ownChain is the hooks dir wt's own dir runs after judging (wt-chain-dir,
// a relative one resolved from the main checkout); ok is false when wt's
// own dir has none.
func ownChain(common string) (string, bool) {
	raw, _, err := readChain(OwnDir(common))
	if err != nil || raw == "" {
		return "", false
	}
	if filepath.IsAbs(raw) {
		return raw, true
	}
	if filepath.Base(common) != ".git" {
		return "", false
	}
	return filepath.Join(filepath.Dir(common), raw), true
}
