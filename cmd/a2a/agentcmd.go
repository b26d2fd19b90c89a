package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/mqttbind"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent", "--broker URL --org O --unit U --id ID [--pool P] [--keepalive SECONDS]",
		"a2a agent --broker mqtt://127.0.0.1:1883 --org acme --unit lab --id echo", stderr)
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS)")
	org := fs.String("org", "", "org_id")
	unit := fs.String("unit", "", "unit_id")
	id := fs.String("id", "", "agent_id")
	pool := fs.String("pool", "", "also serve this shared pool")
	keepalive := fs.Int("keepalive", 30, "MQTT keep-alive in seconds; a crashed agent's Will fires about 1.5 x this later")
	data := fs.String("data", "", "keep tasks in a bbolt database in this directory (default: in memory)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if *brokerURL == "" {
		return fail(2, "--broker is required")
	}
	for _, f := range []struct{ name, v string }{{"org", *org}, {"unit", *unit}, {"id", *id}} {
		if err := mqttbind.CheckIdentifier(f.name+"_id", f.v); err != nil {
			return fail(2, "--%s: %v", f.name, err)
		}
	}
	if *pool != "" {
		if err := mqttbind.CheckIdentifier("pool_id", *pool); err != nil {
			return fail(2, "--pool: %v", err)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ra, err := startRefAgent(ctx, refAgentConfig{broker: *brokerURL, org: *org, unit: *unit, id: *id, pool: *pool,
		keepalive: time.Duration(*keepalive) * time.Second, dataDir: *data, log: log})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "agent %s/%s/%s online (spawned instance %s-c1 serves handed-over tasks)\n", *org, *unit, *id, *id)
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ra.close(closeCtx); err != nil {
		return fail(1, "stopping: %v", err)
	}
	fmt.Fprintf(stdout, "agent %s/%s/%s offline\n", *org, *unit, *id)
	return nil
}

type refAgentConfig struct {
	broker, org, unit, id, pool string
	keepalive                   time.Duration
	dataDir                     string
	log                         *slog.Logger
}

// refAgent is the reference agent and its spawned instance {id}-c1: two
// connections with their own Client IDs, one task store.
type refAgent struct {
	main, spawned       *a2amqtt.Agent
	mainSrv, spawnedSrv *agent.Server
	store               taskstore.Store
}

func startRefAgent(ctx context.Context, c refAgentConfig) (*refAgent, error) {
	var store taskstore.Store = taskstore.NewMemory(nil)
	if c.dataDir != "" {
		b, err := taskstore.OpenBolt(c.dataDir+"/tasks.db", nil, 0)
		if err != nil {
			return nil, err
		}
		store = b
	}
	spawnedID := c.id + "-c1"
	ra := &refAgent{store: store,
		mainSrv:    agent.NewServer(refHandler(c.id, spawnedID), agent.WithStore(store), agent.WithLogger(c.log)),
		spawnedSrv: agent.NewServer(refHandler(spawnedID, ""), agent.WithStore(store), agent.WithLogger(c.log))}
	var err error
	ra.spawned, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{Broker: c.broker, Org: c.org, Unit: c.unit, ID: spawnedID,
		Server: ra.spawnedSrv, KeepAlive: c.keepalive, Logger: c.log})
	if err != nil {
		store.Close()
		return nil, err
	}
	ra.main, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{Broker: c.broker, Org: c.org, Unit: c.unit, ID: c.id, Pool: c.pool,
		Card: refCard(c.id, c.broker), Server: ra.mainSrv, KeepAlive: c.keepalive, Logger: c.log})
	if err != nil {
		ra.spawned.Close(ctx)
		store.Close()
		return nil, err
	}
	return ra, nil
}

// close stops gracefully: the card goes offline, then DISCONNECT.
func (ra *refAgent) close(ctx context.Context) error {
	err := ra.main.Close(ctx)
	if e := ra.spawned.Close(ctx); err == nil {
		err = e
	}
	ra.mainSrv.Close(ctx)
	ra.spawnedSrv.Close(ctx)
	if e := ra.store.Close(); err == nil {
		err = e
	}
	return err
}

// kill drops both connections as a crash would.
func (ra *refAgent) kill() {
	ra.main.Kill()
	ra.spawned.Kill()
	ra.mainSrv.Close(context.Background())
	ra.spawnedSrv.Close(context.Background())
	ra.store.Close()
}
