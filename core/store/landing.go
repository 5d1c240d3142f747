package store

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/wt-tool/wt/core/proc"
)

// The publication lease and the landing records (docs/design.md, "The
// publication lease"): publication.json is the lease of the one lander
// (wt-admin land) that may move the publication branch; landing/<id>.json
// is where an allocation's work stands on its way onto it.
const (
	publicationLeaseName = "publication.json"
	landingDir           = "landing"
	// LandLogsDir holds the output of each landing's test, one file an
	// attempt (LandLogsDir/<task>/<n>.log, the task's slashes kept).
	LandLogsDir = "land-logs"
	// LandHandbackDir holds, for each task land handed back, what it met
	// (HandbackPath): the conflict and its diff, main's commits and the
	// tasks that landed them, the test and its output's tail. wt-exec
	// gives its path to the task's next run (HandbackEnv).
	LandHandbackDir = "land-handback"
	// HandbackEnv names the hand-back file in a run of a task handed back.
	HandbackEnv = "WT_LAND_HANDBACK"
)

// PublicationLease is publication.json: the lander that holds the
// publication lease. Its holder is a process identity, like a writer
// lease's: it is live exactly while that process runs on this boot, and a
// lander that finds it dead takes it over with that proof.
type PublicationLease struct {
	Meta
	LeaseID      string      `json:"lease_id"`
	RepositoryID string      `json:"repository_id"`
	Branch       string      `json:"branch"`
	Holder       proc.Holder `json:"holder"`
	AcquiredAt   string      `json:"acquired_at"`
	// Task is the task being landed now ("" between tasks).
	Task string `json:"task"`
	// Fleet is the fleet lease taken with it (fleet mode: one lander per
	// remote).
	Fleet *FleetLease `json:"fleet,omitempty"`
	// MoveToken is the SHA-256 (hex) of the secret the lander gives its
	// own compare-and-swap of the publication branch, and nothing else
	// ($WT_PUBLICATION_TOKEN in that one git's environment): set just
	// before the move and cleared after it. The gate lets a move of the
	// branch through only with the secret whose hash this is, so what
	// the lander starts (its test, the integration's git, their hooks
	// and filters) cannot move the branch by descending from it.
	MoveToken string `json:"move_token,omitempty"`
}

// PublicationTokenEnv carries the lander's per-move secret to the gate,
// in the environment of the one git that moves the publication branch
// (PublicationLease.MoveToken).
const PublicationTokenEnv = "WT_PUBLICATION_TOKEN"

// MoveTokenHash is what PublicationLease.MoveToken records of secret.
func MoveTokenHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// MoveTokenMatches reports whether secret is the one whose hash the lease
// records (never for an empty secret or an empty record).
func (l PublicationLease) MoveTokenMatches(secret string) bool {
	if secret == "" || l.MoveToken == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(MoveTokenHash(secret)), []byte(l.MoveToken)) == 1
}

// Landing states (a landing record's State).
const (
	LandingReady      = "READY"
	LandingLanded     = "LANDED"
	LandingConflict   = "LAND_CONFLICT"
	LandingTestFailed = "LAND_TEST_FAILED"
)

// Landing is landing/<allocation id>.json: where an allocation's work
// stands on its way onto the publication branch.
type Landing struct {
	Meta
	AllocationID string `json:"allocation_id"`
	TaskKey      string `json:"task_key"`
	State        string `json:"state"`
	// ReadyAt and ReadySeq order the ready queue (ReadySeq first); ReadyBy
	// names who marked it (an owner, or a writer's client id).
	ReadyAt  string `json:"ready_at"`
	ReadySeq int    `json:"ready_seq"`
	ReadyBy  string `json:"ready_by"`
	// ReadyTip is the task branch's tip the ready mark approved: what
	// land lands (LAND_TIP_MOVED when the branch moved since).
	ReadyTip string `json:"ready_tip,omitempty"`
	// ReadyStrategy is how the ready mark asked the task to be integrated
	// (rebase, merge, squash; "" for land's --strategy).
	ReadyStrategy string `json:"ready_strategy,omitempty"`
	// Attempts counts the landings tried.
	Attempts int `json:"attempts"`
	// Source is the task branch's tip the last attempt integrated, Onto
	// the publication tip it integrated onto, Result what it made (the
	// publication branch's new tip once LANDED).
	Source string `json:"source"`
	Onto   string `json:"onto"`
	Result string `json:"result"`
	// AttemptRef keeps a failed attempt (refs/wt/land/<task>/<n>).
	AttemptRef string `json:"attempt_ref"`
	// Paths are a conflict's paths; TestExit and TestLog a failed test's
	// exit status and output.
	Paths    []string `json:"paths"`
	TestExit int      `json:"test_exit"`
	TestLog  string   `json:"test_log"`
	// Strategy is how the last attempt integrated (rebase, merge, squash).
	Strategy string `json:"strategy"`
	// TestUnconfined is set when the last attempt's test ran outside a
	// sandbox (land --test-unconfined); AcceptedUngated when it landed a
	// tip wt's ledger did not approve (land --accept-ungated).
	TestUnconfined  bool `json:"test_unconfined,omitempty"`
	AcceptedUngated bool `json:"accepted_ungated,omitempty"`
	// Batch names the batch the task landed in (the landing journal's
	// transaction id; empty for a landing of one task), and PassedLog the
	// output of the test its landed commit passed.
	Batch     string `json:"batch,omitempty"`
	PassedLog string `json:"passed_log,omitempty"`
	// Handback is the hand-back file of a task handed back
	// (HandbackPath), while it is.
	Handback  string `json:"handback,omitempty"`
	UpdatedAt string `json:"updated_at"`
}

// HandbackPath is allocation id's hand-back file under store root.
func HandbackPath(root, id string) string {
	return filepath.Join(root, LandHandbackDir, id+".json")
}

// PublicationLease reads publication.json (ok false when no lander holds
// it).
func (tx *Tx) PublicationLease() (PublicationLease, bool, error) {
	var l PublicationLease
	ok, err := readRecord(tx.path(publicationLeaseName), &l)
	return l, ok, err
}

// PutPublicationLease writes publication.json.
func (tx *Tx) PutPublicationLease(l *PublicationLease) error {
	return tx.put(tx.path(publicationLeaseName), l, durable)
}

// RemovePublicationLease removes publication.json.
func (tx *Tx) RemovePublicationLease() error {
	return tx.remove(tx.path(publicationLeaseName), durable)
}

// Landing reads landing/<allocation id>.json (ok false when the
// allocation has none).
func (tx *Tx) Landing(allocationID string) (Landing, bool, error) {
	var l Landing
	if err := validID("allocation", allocationID); err != nil {
		return l, false, err
	}
	if has, err := tx.hasDir(landingDir); err != nil || !has {
		return l, false, err
	}
	return tx.landingAt(allocationID)
}

// landingAt reads landing/<allocation id>.json, the directory known to be
// there.
func (tx *Tx) landingAt(allocationID string) (Landing, bool, error) {
	var l Landing
	p := tx.path(landingDir, allocationID+".json")
	ok, err := readRecord(p, &l)
	if err != nil || !ok {
		return l, false, err
	}
	if l.AllocationID != allocationID {
		return l, false, invalid(p, fmt.Errorf("allocation_id %q does not match the file name", l.AllocationID))
	}
	return l, true, nil
}

// LandingOrNew is allocation id's landing record, or a new one for task
// when it has none.
func (tx *Tx) LandingOrNew(allocationID, task string) (Landing, error) {
	l, ok, err := tx.Landing(allocationID)
	if err == nil && !ok {
		l = Landing{Meta: Meta{SchemaVersion: SchemaVersion}, AllocationID: allocationID, TaskKey: task}
	}
	return l, err
}

// Landings reads every landing record, in the ready queue's order
// (ReadySeq, then task key).
func (tx *Tx) Landings() ([]Landing, error) {
	if has, err := tx.hasDir(landingDir); err != nil || !has {
		return nil, err
	}
	ids, err := tx.list(landingDir)
	if err != nil {
		return nil, err
	}
	var out []Landing
	for _, id := range ids {
		if err := validID("allocation", id); err != nil {
			return nil, err
		}
		l, ok, err := tx.landingAt(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ReadySeq != out[j].ReadySeq {
			return out[i].ReadySeq < out[j].ReadySeq
		}
		return out[i].TaskKey < out[j].TaskKey
	})
	return out, nil
}

// PutLanding writes a landing record, making the directory if this store
// has none yet.
func (tx *Tx) PutLanding(l *Landing) error {
	if err := validID("allocation", l.AllocationID); err != nil {
		return err
	}
	if has, err := tx.hasDir(landingDir); err != nil {
		return err
	} else if !has {
		if err := mkdirNoFollow(tx.path(landingDir)); err != nil {
			return err
		}
	}
	return tx.put(tx.path(landingDir, l.AllocationID+".json"), l, durable)
}
