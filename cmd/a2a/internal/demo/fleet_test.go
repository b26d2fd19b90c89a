package demo_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/internal/pgtest"
)

// TestFleetStory: story F01 on a PostgreSQL database (pgtest) passes:
// the follow-up to the killed member's task is sent to that member, then
// to the pool, and answered by another member; the schema the story
// created is gone afterwards, and nothing else was created. On a database
// it cannot reach the story fails (not skipped), the DSN's password in no
// output.
func TestFleetStory(t *testing.T) {
	node := pgtest.Start(t)
	dsn := node.NewDatabase(t)
	var out bytes.Buffer
	var msgs []demo.Message
	results, err := demo.Run(context.Background(), demo.Config{Out: &out, Transcript: true, Stories: []string{"F01"}, PG: dsn,
		Record: func(story string, m []demo.Message) { msgs = m }})
	if err != nil || len(results) != 1 || results[0].Err != nil || results[0].Skipped {
		t.Fatalf("F01: %v %+v\n%s", err, results, out.String())
	}
	t.Logf("F01: %s", results[0].Detail)
	if !strings.Contains(out.String(), "   pass: ") || !strings.Contains(out.String(), "all 1 stories passed") {
		t.Fatalf("output:\n%s", out.String())
	}
	// The follow-up: to the killed member's direct topic first, then to
	// the pool's.
	var direct, pooled int
	for _, m := range msgs {
		if !bytes.Contains(m.Payload, []byte(`"blue"`)) {
			continue
		}
		switch {
		case strings.Contains(m.Topic, "/request/") && !strings.Contains(m.Topic, "/pool/"):
			direct++
		case strings.Contains(m.Topic, "/pool/"):
			pooled++
		}
	}
	if direct != 2 || pooled != 1 {
		t.Errorf("the follow-up was published %d times to a member and %d to the pool, want 2 (the retry profile) and 1", direct, pooled)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var schemas, tables int
	if err := conn.QueryRow(context.Background(),
		"SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'a2a_demo_%'), (SELECT count(*) FROM pg_tables WHERE tablename LIKE 'a2a%')").Scan(&schemas, &tables); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 || tables != 0 {
		t.Errorf("after the story the database holds %d a2a_demo_ schemas and %d a2a tables, want none", schemas, tables)
	}

	t.Run("a database it cannot reach", func(t *testing.T) {
		const secret = "Sekr3t-pw"
		u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", secret), Host: "127.0.0.1:1", Path: "/none", RawQuery: "sslmode=disable&connect_timeout=5"}
		var out bytes.Buffer
		results, err := demo.Run(context.Background(), demo.Config{Out: &out, Stories: []string{"F01"}, PG: u.String()})
		if err == nil || len(results) != 1 || results[0].Skipped || results[0].Err == nil || !strings.Contains(out.String(), "   FAIL: connecting to PostgreSQL") {
			t.Fatalf("F01 on an unreachable database: %v %+v\n%s", err, results, out.String())
		}
		if strings.Contains(out.String()+results[0].Err.Error(), secret) {
			t.Fatalf("the password is printed:\n%s", out.String())
		}
	})
}
