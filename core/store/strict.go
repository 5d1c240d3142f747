package store

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
	"github.com/wt-tool/wt/core/shell"
	"github.com/wt-tool/wt/core/strictjson"
)

// decodeStrict decodes one JSON object into rec through the one strict
// reader (exact-case keys, no duplicates, no unknown or missing fields, no
// trailing data; see core/strictjson), refusing any schema version but
// SchemaVersion.
func decodeStrict(data []byte, rec Record) error {
	if err := strictjson.Decode(data, rec); err != nil {
		return err
	}
	if v := rec.meta().SchemaVersion; v != SchemaVersion {
		return fmt.Errorf("unknown schema version %d (this wt reads %d)", v, SchemaVersion)
	}
	if rec.meta().RecordVersion < 1 {
		return fmt.Errorf("record_version %d is not positive", rec.meta().RecordVersion)
	}
	return nil
}

// invalid is the INVALID_METADATA refusal for a file. It returns the typed
// error so that a caller can add a more specific hint.
func invalid(path string, err error) *decision.Error {
	return decision.SayWrap(decision.InvalidMetadata, err, "unreadable", path).
		WithHint("inspect the file by hand; wt never overwrites what it cannot read").
		WithFact("file", path)
}

// isNotWritable reports an error that says the store cannot be written at
// all (a read-only file system, missing permissions), as opposed to a
// damaged file.
func isNotWritable(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// notWritable is the STORE_NOT_WRITABLE refusal for a write at path.
func notWritable(path string, err error) error {
	if !isNotWritable(err) {
		return err
	}
	return decision.SayWrap(decision.StoreNotWritable, err, "wt-store-cannot", path).
		WithHint("make it writable for this user (see: ls -ld %s; mount | grep ' ro,'), then run the command again", shell.Word(filepath.Dir(path))).
		WithFact("file", path)
}
