package proc

import (
	"errors"
)

// maxChain bounds every walk up the parent chain, so that a /proc that changes
// under us (a pid reused as its own ancestor) can never loop.
const maxChain = 4096

// Ancestors returns the parent chain of pid, nearest first, ending at pid 1
// (included) or where a parent can no longer be read. pid itself is not in it.
func (r *Reader) Ancestors(pid int) ([]int, error) {
	var chain []int
	for i := 0; i < maxChain; i++ {
		st, err := r.Stat(pid)
		if errors.Is(err, ErrNoProcess) {
			return chain, nil
		}
		if err != nil {
			return chain, err
		}
		if st.PPID < 1 {
			return chain, nil
		}
		chain = append(chain, st.PPID)
		if st.PPID == 1 {
			return chain, nil
		}
		pid = st.PPID
	}
	return chain, nil
}

// Walked returns pid's stat as the reader's last HasAncestor read it, if
// that walk passed pid: a caller that needs a process of the chain (a
// hook's parent) reads its /proc entry once.
func (r *Reader) Walked(pid int) (Stat, bool) {
	for _, st := range r.walked {
		if st.PID == pid {
			return st, true
		}
	}
	return Stat{}, false
}

// HasAncestor reports whether the process identified by anc is pid itself or
// one of its ancestors, comparing start ticks at the matching hop so that a
// reused pid is never mistaken for the original. This sits on every hook call:
// it reads one stat file a hop into the reader's buffer.
func (r *Reader) HasAncestor(pid int, anc Identity) (bool, error) {
	boot, err := BootID()
	if err != nil {
		return false, err
	}
	r.walked = r.walked[:0]
	if anc.BootID != boot {
		return false, nil
	}
	for i := 0; i < maxChain && pid >= 1; i++ {
		st, err := r.Stat(pid)
		if errors.Is(err, ErrNoProcess) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		r.walked = append(r.walked, st)
		if pid == anc.PID {
			return st.StartTicks == anc.StartTicks, nil
		}
		// A parent always starts no later than its child. Once the chain is older
		// than the ancestor we look for, it cannot be above us.
		if st.StartTicks < anc.StartTicks {
			return false, nil
		}
		pid = st.PPID
	}
	return false, nil
}
