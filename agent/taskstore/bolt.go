package taskstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

var (
	bucketTasks = []byte("tasks")
	// bucketContexts indexes tasks by context: key contextId + 0x00 +
	// taskId, value the task's Created and Updated times (two big-endian
	// Unix nanosecond counts), so a context is read without its tasks.
	bucketContexts = []byte("contexts")
)

func contextKey(ctxID, taskID string) []byte {
	return append(append([]byte(ctxID), 0), taskID...)
}

// contextValue is the index value of a task: its Created and Updated times.
func contextValue(r *Record) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(r.Created.UnixNano()))
	return binary.BigEndian.AppendUint64(v, uint64(r.Updated.UnixNano()))
}

// parseContextValue reads an index value; ok is false for one written
// before the index held times (an empty value).
func parseContextValue(v []byte) (created, updated time.Time, ok bool) {
	if len(v) != 16 {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), true
}

// Bolt is a durable Store in a bbolt database file: every change is
// committed to disk before the call returns, so tasks survive a restart.
type Bolt struct {
	db  *bolt.DB
	now func() time.Time
}

// OpenBolt opens (creating if needed) the database at path. now may be nil
// (time.Now). Only one process may open a file at a time; OpenBolt waits at
// most timeout for the file lock (0: one second).
func OpenBolt(path string, now func() time.Time, timeout time.Duration) (*Bolt, error) {
	if now == nil {
		now = time.Now
	}
	if timeout == 0 {
		timeout = time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("taskstore: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("taskstore: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketTasks); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketContexts)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("taskstore: %w", err)
	}
	return &Bolt{db: db, now: now}, nil
}

// Create implements Store.
func (s *Bolt) Create(ctx context.Context, r Record) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTasks)
		if old := b.Get([]byte(r.Task.ID)); old != nil {
			rec, err := decode(old)
			if err != nil {
				return err
			}
			out = rec
			return ErrExists
		}
		t := s.now()
		r.Created, r.Updated = t, t
		data, err := encode(r)
		if err != nil {
			return err
		}
		out, err = decode(data)
		if err != nil {
			return err
		}
		if r.Task.ContextID != "" {
			if err := tx.Bucket(bucketContexts).Put(contextKey(r.Task.ContextID, r.Task.ID), contextValue(&r)); err != nil {
				return err
			}
		}
		return b.Put([]byte(r.Task.ID), data)
	})
	if err != nil && !errors.Is(err, ErrExists) {
		return Record{}, fmt.Errorf("taskstore: %w", err)
	}
	return out, err
}

// Get implements Store.
func (s *Bolt) Get(ctx context.Context, id string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketTasks).Get([]byte(id))
		if data == nil {
			return ErrNotFound
		}
		var err error
		out, err = decode(data)
		return err
	})
	return out, err
}

// Update implements Store.
func (s *Bolt) Update(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTasks)
		data := b.Get([]byte(id))
		if data == nil {
			return ErrNotFound
		}
		r, err := decode(data)
		if err != nil {
			return err
		}
		old := r.Task.ContextID
		if err := fn(&r); err != nil {
			return err
		}
		if r.Task.ID != id {
			return errors.New("taskstore: Update may not change the task id")
		}
		if r.Task.ContextID != old {
			return errors.New("taskstore: Update may not change the context id")
		}
		r.Updated = s.now()
		data, err = encode(r)
		if err != nil {
			return err
		}
		out = r
		if r.Task.ContextID != "" {
			if err := tx.Bucket(bucketContexts).Put(contextKey(r.Task.ContextID, id), contextValue(&r)); err != nil {
				return err
			}
		}
		return b.Put([]byte(id), data)
	})
	if err != nil {
		return Record{}, err
	}
	return out, nil
}

// List implements Store.
func (s *Bolt) List(ctx context.Context, f Filter) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	var all []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(_, v []byte) error {
			r, err := decode(v)
			if err != nil {
				return err
			}
			all = append(all, r)
			return nil
		})
	})
	if err != nil {
		return Page{}, err
	}
	return page(all, f)
}

// Close closes the database file.
func (s *Bolt) Close() error { return s.db.Close() }

// Context implements Store.
func (s *Bolt) Context(ctx context.Context, id string) (ContextInfo, error) {
	if err := ctx.Err(); err != nil {
		return ContextInfo{}, err
	}
	if id == "" {
		return ContextInfo{}, ErrNotFound
	}
	var in []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := contextKey(id, "")
		c := tx.Bucket(bucketContexts).Cursor()
		tasks := tx.Bucket(bucketTasks)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			taskID := string(k[len(prefix):])
			if created, updated, ok := parseContextValue(v); ok {
				in = append(in, Record{Task: a2a.Task{ID: taskID, ContextID: id}, Created: created, Updated: updated})
				continue
			}
			data := tasks.Get([]byte(taskID))
			if data == nil {
				continue
			}
			r, err := decode(data)
			if err != nil {
				return err
			}
			in = append(in, r)
		}
		return nil
	})
	if err != nil {
		return ContextInfo{}, err
	}
	return contextOf(id, in)
}
