package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wt-tool/wt/core/proc"
	"github.com/wt-tool/wt/core/safefile"
)

// A confined run's private view (wrapper/confine) is recorded here from
// before its command starts until the view is removed, so that a view a
// killed wt-exec leaves is found and recovered: <store>/views/<worktree
// key>.json. wt-exec writes it whole by rename, without the store's lock:
// only the wt-exec that holds the worktree's lease writes it.

// ViewsDir is where the store at root records views.
func ViewsDir(root string) string { return filepath.Join(root, "views") }

// ViewRecord is one view's record.
type ViewRecord struct {
	Dir       string `json:"dir"`
	Task      string `json:"task"`
	Branch    string `json:"branch"`
	Published string `json:"published"`
	Reftable  bool   `json:"reftable"`
	// Discard marks a sandbox's view (wt-exec --sandbox): nothing of it
	// is ever published or kept; a killed run's is only removed.
	Discard bool `json:"discard,omitempty"`
	// Runner is the wt-exec that made the view: while it runs, the view
	// is in use, whatever the worktree's lease says (a role whose writes
	// wt does not gate has none).
	Runner *proc.Identity `json:"runner,omitempty"`
}

// ViewRecordPath is the record of worktree key's view in the store at root.
func ViewRecordPath(root, key string) string { return filepath.Join(ViewsDir(root), key+".json") }

// WriteViewRecord records (or updates) the view of worktree key.
func WriteViewRecord(root, key string, r ViewRecord) error {
	if err := os.MkdirAll(ViewsDir(root), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return safefile.Replace(ViewRecordPath(root, key), append(b, '\n'), 0o644)
}

// ReadViewRecord reads worktree key's view record (ok false: none).
func ReadViewRecord(root, key string) (r ViewRecord, ok bool, err error) {
	b, err := safefile.Read(ViewRecordPath(root, key), 1<<16, safefile.NoFollow)
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Dir == "" || !filepath.IsAbs(r.Dir) {
		return r, false, fmt.Errorf("%s: not a view record", ViewRecordPath(root, key))
	}
	return r, true, nil
}

// RemoveViewRecord removes worktree key's view record.
func RemoveViewRecord(root, key string) error {
	err := os.Remove(ViewRecordPath(root, key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ViewRecords lists the worktree keys that have a view record.
func ViewRecords(root string) ([]string, error) {
	ents, err := os.ReadDir(ViewsDir(root))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var keys []string
	for _, e := range ents {
		if k, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(k, ".") {
			keys = append(keys, k)
		}
	}
	return keys, err
}

// KeptPrefix is where wt-exec keeps a confined run's tip it could not
// publish because the task branch moved outside the run
// (PUBLISH_CONFLICT): refs/wt/kept/<task>.
const KeptPrefix = "refs/wt/kept/"
