package main

// The topic root (docs/protocol.md §1.5) of a2a agent, send, watch,
// broker and demo: --topic-root, else $A2A_TOPIC_ROOT, else the profile's
// $a2a/v1. Another root is a deployment choice outside the profile, for a
// broker that refuses client topics beginning with $ (MQTT v5 §4.7.2 lets
// it): every peer must use the same one.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/a2abind/a2abind/generated/mqttbind"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// envTopicRoot is the environment variable of the topic root; the flag
// takes precedence.
const envTopicRoot = "A2A_TOPIC_ROOT"

// plainRoot is the root without $ that the messages suggest.
const plainRoot = "a2a/v1"

// rootFlag is the --topic-root flag of a command.
type rootFlag struct {
	fs    *flag.FlagSet
	value *string
}

func addRootFlag(fs *flag.FlagSet) *rootFlag {
	return &rootFlag{fs: fs, value: fs.String("topic-root", "", "root of every A2A topic (default: $"+envTopicRoot+", else the profile's "+mqttbind.DefaultRoot+
		"); another, such as "+plainRoot+" for a broker that refuses topics beginning with $, is outside the profile: "+
		"every agent, requester and watch must use the same one (docs/protocol.md §1.5)")}
}

// set reports whether --topic-root was given.
func (r *rootFlag) set() bool {
	return given(r.fs, "topic-root")
}

// root returns the topic root: --topic-root, else $A2A_TOPIC_ROOT, else
// the profile's. An invalid root is a usage error (exit 2) naming the flag
// or the variable. A root other than the profile's is noted in one line
// on stderr: it is outside the profile, and peers must use the same.
func (r *rootFlag) root(stderr io.Writer) (mqttbind.Root, error) {
	s, from := *r.value, "--topic-root"
	if !r.set() {
		s, from = os.Getenv(envTopicRoot), "$"+envTopicRoot
	}
	root, err := mqttbind.ParseRoot(s)
	if err != nil {
		return root, fail(exitUsage, "%s: %v", from, err)
	}
	if !root.IsDefault() {
		fmt.Fprintf(stderr, "%s: note: topic root %s (%s) is outside the A2A-over-MQTT profile, whose root is %s: "+
			"every agent, requester and watch must use the same root, and peers that follow the profile do not see these agents (docs/protocol.md §1.5)\n",
			r.fs.Name(), root, from, mqttbind.DefaultRoot)
	}
	return root, nil
}

// dollarRefusal reports whether err is a broker's refusal of a topic
// under root, a root beginning with $: a publish or a Will refused 0x90
// topic name invalid, a subscription refused 0x8F topic filter invalid.
// MQTT v5 §4.7.2 lets a server keep clients from topics beginning with $,
// and ejabberd, for one, does so with these codes (docs/protocol.md §12.1).
func dollarRefusal(err error, root mqttbind.Root) bool {
	if !strings.HasPrefix(root.String(), "$") {
		return false
	}
	var ce *a2amqtt.ConnectError
	var pe *a2amqtt.PublishError
	var se *a2amqtt.SubscribeError
	switch {
	case errors.As(err, &pe):
		_, under := root.Relative(pe.Topic)
		return pe.ReasonCode == 0x90 && under
	case errors.As(err, &se):
		_, under := root.Relative(se.Filter)
		return se.ReasonCode == 0x8F && under
	case errors.As(err, &ce):
		// The Will, on the card's topic, is the only topic a CONNECT
		// names.
		return ce.ReasonCode == 0x90
	}
	return false
}

// withRootHint adds to e, the exit error made of err, what to do when err
// is a broker's refusal of the root's $ topics (dollarRefusal): run with a
// root without $.
func withRootHint(e, err error, root mqttbind.Root) error {
	var ee *exitError
	if !dollarRefusal(err, root) || !errors.As(e, &ee) {
		return e
	}
	ee.msg += "; the broker refuses topics beginning with $: try --topic-root " + plainRoot +
		" (or $" + envTopicRoot + "), the same on every agent, requester and watch (docs/protocol.md §1.5)"
	return e
}
