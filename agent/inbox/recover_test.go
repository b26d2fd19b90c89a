package inbox

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// filled is a closed queue file holding known records and replay keys.
type filled struct {
	path    string
	records map[uint64]Record // pending, by Seq
	// written holds every record written, pending or taken, by Seq: an
	// older state of the file (a meta page lost) can still hold taken
	// ones.
	written map[uint64]Record
	replay  int
	// bySerial maps the serial number in a payload to the record's Seq.
	bySerial map[int]uint64
}

var serialRE = regexp.MustCompile(`rec-(\d{5})-`)

// fill writes n records (payloads of about 230 bytes, each naming its
// serial number) from concurrent senders, takes the first 20 with replay
// keys, puts the 20th back, and closes the file.
func fill(t *testing.T, n int) *filled {
	t.Helper()
	path := dbPath(t)
	s, _, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				r := msg(fmt.Sprintf("peer-%d", i%7), fmt.Sprint(i))
				r.Payload = []byte(fmt.Sprintf("rec-%05d-%s", i, strings.Repeat("x", 220)))
				mustEnqueue(t, s, r)
			}
		})
	}
	wg.Wait()
	written := map[uint64]Record{}
	for _, r := range all(t, s) {
		written[r.Seq] = r
	}
	var takes []Taken
	for seq := uint64(1); seq <= 20; seq++ {
		takes = append(takes, Taken{Seq: seq, ReplayKey: fmt.Sprintf("object-%03d", seq), Until: t0.Add(time.Hour)})
	}
	if _, _, err := s.Take(bg, takes); err != nil {
		t.Fatal(err)
	}
	// The last one goes back: a commit that rewrites the root on pages
	// the Take freed, as in a file in use, rather than at its end.
	if err := s.Untake(bg, []Record{written[20]}, []string{"object-020"}); err != nil {
		t.Fatal(err)
	}
	f := &filled{path: path, records: map[uint64]Record{}, written: written, replay: 19, bySerial: map[int]uint64{}}
	for _, r := range written {
		var serial int
		fmt.Sscanf(serialRE.FindString(string(r.Payload)), "rec-%05d-", &serial)
		f.bySerial[serial] = r.Seq
	}
	for _, r := range all(t, s) {
		f.records[r.Seq] = r
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

// asBolt opens a bbolt file for writing as Bolt does: without storing a
// free list (bbolt would add one to the file).
var asBolt = &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType}

// pageInfo describes a page of a sound file.
type pageInfo struct {
	// typ is bbolt's type of the page, or "replay log" for the leaf
	// holding the replay log.
	typ string
	// seqs are the records whose payload the page holds.
	seqs []uint64
}

// pages maps the pages of f's file below its high water mark.
func (f *filled) pages(t *testing.T) (pageSize int, hwm int64, out []pageInfo) {
	t.Helper()
	db, err := bolt.Open(f.path, 0o600, asBolt)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pageSize = db.Info().PageSize
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	hwm = tx.Size()
	logRoot := int(tx.Bucket(bucketReplayLog).Root()) // 0: inline
	for id := 0; int64(id*pageSize) < hwm; id++ {
		info, err := tx.Page(id)
		if err != nil || info == nil {
			t.Fatalf("page %d: %v %v", id, info, err)
		}
		p := pageInfo{typ: info.Type}
		if id == logRoot && p.typ == "leaf" {
			p.typ = "replay log"
		}
		if p.typ == "leaf" {
			for _, m := range serialRE.FindAllSubmatch(data[id*pageSize:(id+1)*pageSize], -1) {
				var serial int
				fmt.Sscanf(string(m[1]), "%d", &serial)
				if seq, ok := f.bySerial[serial]; ok {
					p.seqs = append(p.seqs, seq)
				}
			}
		}
		out = append(out, p)
	}
	return pageSize, hwm, out
}

// damage copies f's file to a new path and changes the copy.
func (f *filled) damage(t *testing.T, change func([]byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	path := dbPath(t)
	if err := os.WriteFile(path, change(bytes.Clone(data)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkRecovered opens a damaged copy and checks what holds whatever the
// damage: the open succeeds, the store works, every record kept is one
// that was written, unchanged, and the Recovery adds up. It returns the
// Seqs kept and the Recovery.
func (f *filled) checkRecovered(t *testing.T, path string) (map[uint64]bool, Recovery) {
	t.Helper()
	s, rec, err := OpenBolt(path, BoltOptions{RecoverTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("OpenBolt = %v", err)
	}
	defer s.Close()
	got := all(t, s)
	kept := map[uint64]bool{}
	for _, r := range got {
		want, ok := f.written[r.Seq]
		if !ok || !sameRecord(r, want) {
			t.Fatalf("record %d kept as %+v, written as %+v", r.Seq, r, want)
		}
		kept[r.Seq] = true
	}
	if rec.Damaged {
		if rec.MovedTo == "" || rec.Error == "" || rec.Records != len(got) {
			t.Fatalf("Recovery %+v with %d records", rec, len(got))
		}
		if _, err := os.Stat(rec.MovedTo); err != nil {
			t.Fatalf("the damaged file: %v", err)
		}
	} else if rec.MovedTo != "" || rec.Records != 0 {
		t.Fatalf("Recovery of an undamaged file %+v", rec)
	}
	if n := len(got) + rec.Unreadable; n > len(f.written) {
		t.Fatalf("%d records kept and %d unreadable, of %d written (%+v)", len(got), rec.Unreadable, len(f.written), rec)
	}
	if st, _ := s.Stats(bg); st.Messages != len(got) || st.Replay != rec.Replay && rec.Damaged {
		t.Fatalf("Stats %+v, %d records, Recovery %+v", st, len(got), rec)
	}
	// The store works, and new Seqs follow every Seq kept.
	r, dup, full, err := s.Enqueue(bg, msg("after", "recovery"), roomy)
	if err != nil || dup || full != "" {
		t.Fatalf("Enqueue after recovery: dup %v, full %q, %v", dup, full, err)
	}
	for seq := range kept {
		if r.Seq <= seq {
			t.Fatalf("new Seq %d reuses one kept (%d)", r.Seq, seq)
		}
	}
	if _, _, err := s.Take(bg, []Taken{{Seq: r.Seq, ReplayKey: "after", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	// The replay keys kept are known: all of them, or none.
	if all, none := !rec.Damaged || rec.Replay == f.replay, rec.Replay == 0; all || none {
		r := mustEnqueue(t, s, msg("after", "replay"))
		replayed, _, err := s.Take(bg, []Taken{{Seq: r.Seq, ReplayKey: "object-007", Until: t0.Add(time.Hour)}})
		if err != nil || replayed[0] != all {
			t.Fatalf("Take of a key entered before the damage: replayed %v, %v (%+v)", replayed, err, rec)
		}
	}
	return kept, rec
}

func TestOpenRecoversADamagedFile(t *testing.T) {
	f := fill(t, 300)
	pageSize, hwm, pages := f.pages(t)
	info, _ := os.Stat(f.path)
	size := int(info.Size())
	t.Logf("file %d bytes, pages of %d, high water mark %d", size, pageSize, hwm)
	truncate := func(at int) func([]byte) []byte { return func(b []byte) []byte { return b[:at] } }
	cases := []struct {
		name        string
		change      func([]byte) []byte
		wantDamaged bool
	}{
		{"random bytes", func(b []byte) []byte {
			r := rand.New(rand.NewPCG(1, 2))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}, true},
		{"an empty file", truncate(0), true},
		{"shorter than a page", truncate(100), true},
		{"the meta pages only", truncate(2 * pageSize), true},
		{"both meta pages zeroed", func(b []byte) []byte { clear(b[:2*pageSize]); return b }, true},
	}
	for _, frac := range []int{1, 2, 3, 4, 5, 6, 7} {
		at := size * frac / 8
		cases = append(cases, struct {
			name        string
			change      func([]byte) []byte
			wantDamaged bool
		}{fmt.Sprintf("truncated at %d/8 (%d bytes)", frac, at), truncate(at), int64(at) < hwm})
	}
	for _, at := range []int{int(hwm) - pageSize, int(hwm) - 1, int(hwm), size - 1} {
		cases = append(cases, struct {
			name        string
			change      func([]byte) []byte
			wantDamaged bool
		}{fmt.Sprintf("truncated at %d bytes", at), truncate(at), int64(at) < hwm})
	}
	precise := 0 // truncations checked record by record
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := f.damage(t, tc.change)
			kept, rec := f.checkRecovered(t, path)
			if rec.Damaged != tc.wantDamaged {
				t.Fatalf("Recovery %+v, want damaged %v", rec, tc.wantDamaged)
			}
			if !rec.Damaged && len(kept) != len(f.records) {
				t.Fatalf("an undamaged file kept %d records of %d", len(kept), len(f.records))
			}
			if !strings.HasPrefix(tc.name, "truncated at") || !rec.Damaged {
				return
			}
			// Every record on a page still whole is kept, when the
			// pages leading to it are whole too.
			at := int(must(os.Stat(rec.MovedTo)).Size())
			var readable []uint64
			for id, p := range pages {
				whole := (id+1)*pageSize <= at
				if p.typ == "branch" || (p.typ == "leaf" && p.seqs == nil) {
					if !whole {
						return
					}
				}
				if whole && p.typ == "leaf" {
					readable = append(readable, p.seqs...)
				}
			}
			for _, seq := range readable {
				if !kept[seq] {
					t.Fatalf("record %d, on a whole page, was not salvaged (%+v)", seq, rec)
				}
			}
			precise++
			t.Logf("%+v; %d records on whole pages", rec, len(readable))
		})
	}
	if precise == 0 {
		t.Error("no truncation left the pages leading to the records whole")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestOpenSurvivesAnyPageOverwrittenWithRandomBytes(t *testing.T) {
	f := fill(t, 300)
	pageSize, _, pages := f.pages(t)
	r := rand.New(rand.NewPCG(3, 4))
	for id, p := range pages {
		t.Run(fmt.Sprintf("page %d (%s, %d records)", id, p.typ, len(p.seqs)), func(t *testing.T) {
			path := f.damage(t, func(b []byte) []byte {
				for i := id * pageSize; i < (id+1)*pageSize; i++ {
					b[i] = byte(r.Uint32())
				}
				return b
			})
			kept, rec := f.checkRecovered(t, path)
			lost := 0
			for seq := range f.records {
				if !kept[seq] {
					lost++
				}
			}
			switch {
			case p.typ == "free":
				if rec.Damaged || lost != 0 {
					t.Fatalf("a free page: %+v, %d lost", rec, lost)
				}
			case p.typ == "freelist":
				if lost != 0 {
					t.Fatalf("the freelist: %+v, %d lost", rec, lost)
				}
			case p.typ == "leaf" && p.seqs != nil:
				// A leaf of records: exactly its records are lost.
				for _, seq := range p.seqs {
					if kept[seq] {
						t.Fatalf("record %d of the overwritten page kept", seq)
					}
				}
				if !rec.Damaged || lost != len(p.seqs) || rec.Unreadable != lost || rec.Uncounted || rec.Replay != f.replay {
					t.Fatalf("%+v: %d lost, the page held %d", rec, lost, len(p.seqs))
				}
			case p.typ == "replay log":
				// The replay keys are lost, not the records.
				if !rec.Damaged || lost != 0 || rec.Unreadable != 0 || rec.Uncounted || rec.Replay != 0 {
					t.Fatalf("the replay log: %+v, %d lost", rec, lost)
				}
			case p.typ == "leaf":
				// The root of the file: no bucket can be found.
				if !rec.Damaged || rec.Records != 0 || !rec.Uncounted {
					t.Fatalf("the root page: %+v", rec)
				}
			case p.typ == "branch":
				// The records under it are lost, and counted.
				if !rec.Damaged || rec.Records+rec.Unreadable != len(f.records) || rec.Uncounted || rec.Replay != f.replay {
					t.Fatalf("a branch page: %+v", rec)
				}
			case p.typ != "meta":
				if !rec.Damaged {
					t.Fatalf("a %s page: %+v", p.typ, rec)
				}
			}
			t.Logf("%+v, %d lost", rec, lost)
		})
	}
}

func TestARecordFailingItsChecksumIsDroppedAndCounted(t *testing.T) {
	f := fill(t, 40)
	seq := uint64(30) // pending: fill took 1 to 20
	marker := serialRE.Find(f.records[seq].Payload)
	path := f.damage(t, func(b []byte) []byte {
		// Every copy, the live one and those on free pages.
		for i, n := 0, 0; ; i += n + 12 {
			n = bytes.Index(b[i:], marker)
			if n < 0 {
				return b
			}
			b[i+n+12] ^= 0xff // in the payload
		}
	})
	kept, rec := f.checkRecovered(t, path)
	if rec.Damaged || rec.Unreadable != 1 || kept[seq] || len(kept) != len(f.records)-1 {
		t.Fatalf("%+v, kept %d of %d, record %d kept %v", rec, len(kept), len(f.records), seq, kept[seq])
	}
	// The record is gone from the file too.
	s, rec2 := openAt(t, path, BoltOptions{})
	if rec2 != (Recovery{}) || len(all(t, s)) != len(f.records)-1 {
		t.Fatalf("reopened: %+v, %d records", rec2, len(all(t, s)))
	}
}

func TestADamagedFileIsLoggedAtWarn(t *testing.T) {
	path := dbPath(t)
	if err := os.WriteFile(path, bytes.Repeat([]byte("garbage!"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	s, rec := openAt(t, path, BoltOptions{Logger: newTextLogger(&buf)})
	if !rec.Damaged || !strings.HasPrefix(rec.MovedTo, path+".corrupt-") || len(all(t, s)) != 0 {
		t.Fatalf("%+v", rec)
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, rec.MovedTo) {
		t.Fatalf("log: %s", out)
	}
	// A second damaged file moved aside in the same second gets a name
	// of its own.
	s.Close()
	if err := os.WriteFile(path, bytes.Repeat([]byte("garbage!"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rec2 := openAt(t, path, BoltOptions{})
	if !rec2.Damaged || rec2.MovedTo == rec.MovedTo {
		t.Fatalf("%+v after %+v", rec2, rec)
	}
}

func TestAnUnopenableFileIsAnErrorAndLeftAlone(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := OpenBolt(dir, BoltOptions{}); err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("OpenBolt of a directory = %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the directory: %v", err)
	}
	if m, _ := os.ReadDir(dir); len(m) != 0 {
		t.Fatalf("left %v", m)
	}
}

func TestAReadThatHangsTimesOutAndIsCleanedUpWhenItEnds(t *testing.T) {
	release := make(chan struct{})
	cleaned := make(chan struct{})
	start := time.Now()
	err := guarded(20*time.Millisecond, func() error { <-release; return nil }, func() { close(cleaned) })
	if !errors.Is(err, errTimedOut) || time.Since(start) > 5*time.Second {
		t.Fatalf("guarded = %v after %v", err, time.Since(start))
	}
	close(release)
	select {
	case <-cleaned:
	case <-time.After(5 * time.Second):
		t.Fatal("no cleanup once the read ended")
	}
}

func TestAPanicOrAFaultWhileReadingIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"a panic", func() error { panic("boom") }},
		{"a nil dereference", func() error { var p *int; return fmt.Errorf("%d", *p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *panicError
			if err := guarded(5*time.Second, tc.fn, nil); !errors.As(err, &p) || !isDamage(err) {
				t.Fatalf("guarded = %v", err)
			}
		})
	}
}

func TestARecordDamagedWhileOpenIsReportedAndCanBeRemoved(t *testing.T) {
	s, path := openNew(t)
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, msg("p1", id))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every copy, the live one and those on free pages.
	for i, n := 0, 0; ; i += n + 1 {
		if n = bytes.Index(data[i:], []byte(`"id":"b"`)); n < 0 {
			break
		}
		if _, err := f.WriteAt([]byte("X"), int64(i+n)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if _, err := s.Next(bg, 0, 10); err == nil || !strings.Contains(err.Error(), "seq 2") {
		t.Fatalf("Next over the damaged record = %v", err)
	}
	got, err := s.Remove(bg, []uint64{2})
	if err != nil || len(got) != 1 || got[0].Seq != 2 || got[0].MessageID != "b" || got[0].Payload != nil {
		t.Fatalf("Remove = %+v, %v", got, err)
	}
	if rs, err := s.Next(bg, 0, 10); err != nil || len(rs) != 2 {
		t.Fatalf("Next after the removal = %v, %v", seqsOf(rs), err)
	}
}

func TestADamagedLeafOfTheReplayLogLosesOnlyItsKeys(t *testing.T) {
	path := dbPath(t)
	s, _ := openAt(t, path, BoltOptions{})
	const n = 640
	sendAll(t, s, 64, n/64, roomy, func(g, i int) Record { return msg("p1", fmt.Sprint(g*n/64+i)) })
	rs := all(t, s)
	for i := 0; i < len(rs); i += 64 {
		var takes []Taken
		for _, r := range rs[i : i+64] {
			takes = append(takes, Taken{Seq: r.Seq, ReplayKey: "obj-" + r.MessageID, Until: t0.Add(time.Hour)})
		}
		if _, _, err := s.Take(bg, takes); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// The live leaves of the log, and the keys on each.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, asBolt)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := db.Info().PageSize
	onPage := map[int][]string{}
	var leaves []int
	tx, err := db.Begin(true) // tx.Page wants a writable transaction
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer tx.Rollback()
		for id := 2; int64(id*pageSize) < tx.Size(); id++ {
			if info, err := tx.Page(id); err != nil || info == nil || info.Type != "leaf" {
				continue
			}
			for _, r := range rs {
				h := replayHashOf("obj-" + r.MessageID)
				if bytes.Contains(data[id*pageSize:(id+1)*pageSize], h[:]) {
					onPage[id] = append(onPage[id], "obj-"+r.MessageID)
				}
			}
			if len(onPage[id]) > 0 {
				leaves = append(leaves, id)
			}
		}
	}()
	db.Close()
	if len(leaves) < 3 {
		t.Fatalf("the log is on %d leaves", len(leaves))
	}
	id := leaves[len(leaves)/2]
	lost := onPage[id]
	r := rand.New(rand.NewPCG(9, 10))
	for i := id * pageSize; i < (id+1)*pageSize; i++ {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, rec := openAt(t, path, BoltOptions{RecoverTimeout: 10 * time.Second})
	if !rec.Damaged || rec.Replay != n-len(lost) || rec.Records != 0 || rec.Unreadable != 0 {
		t.Fatalf("Recovery %+v; the page held %d keys of %d", rec, len(lost), n)
	}
	kept := "obj-" + rs[0].MessageID
	if slices.Contains(lost, kept) {
		kept = "obj-" + rs[n-1].MessageID
	}
	a, b := mustEnqueue(t, s2, msg("p2", "a")), mustEnqueue(t, s2, msg("p2", "b"))
	replayed, _, err := s2.Take(bg, []Taken{{Seq: a.Seq, ReplayKey: lost[0], Until: t0.Add(time.Hour)}, {Seq: b.Seq, ReplayKey: kept, Until: t0.Add(time.Hour)}})
	if err != nil || !slices.Equal(replayed, []bool{false, true}) {
		t.Fatalf("Take = %v, %v", replayed, err)
	}
}
