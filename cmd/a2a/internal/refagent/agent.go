package refagent

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// Config configures Start.
type Config struct {
	Broker, Org, Unit, ID, Pool string
	KeepAlive                   time.Duration
	// DataDir keeps tasks in a bbolt database (default: in memory).
	DataDir string
	Log     *slog.Logger
}

// Agent is the reference agent and its spawned instance {id}-c1: two
// connections with their own Client IDs, one task store.
type Agent struct {
	main, spawned       *a2amqtt.Agent
	mainSrv, spawnedSrv *agent.Server
	store               taskstore.Store
}

// Start connects the reference agent and its spawned instance.
func Start(ctx context.Context, c Config) (*Agent, error) {
	var store taskstore.Store = taskstore.NewMemory(nil, taskstore.KeepFinishedFor(agent.DefaultFinishedRetention))
	if c.DataDir != "" {
		b, err := taskstore.OpenBolt(c.DataDir+"/tasks.db", nil, 0)
		if err != nil {
			return nil, err
		}
		store = b
	}
	spawnedID := c.ID + "-c1"
	ra := &Agent{store: store,
		mainSrv:    agent.NewServer(Handler(c.ID, spawnedID), agent.WithStore(store), agent.WithLogger(c.Log)),
		spawnedSrv: agent.NewServer(Handler(spawnedID, ""), agent.WithStore(store), agent.WithLogger(c.Log))}
	var err error
	ra.spawned, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{
		Connection: a2amqtt.Connection{Broker: c.Broker, KeepAlive: c.KeepAlive},
		Org:        c.Org,
		Unit:       c.Unit,
		ID:         spawnedID,
		Server:     ra.spawnedSrv,
		Logger:     c.Log,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	ra.main, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{
		Connection: a2amqtt.Connection{Broker: c.Broker, KeepAlive: c.KeepAlive},
		Org:        c.Org,
		Unit:       c.Unit,
		ID:         c.ID,
		Pool:       c.Pool,
		Card:       Card(c.ID, c.Broker),
		Server:     ra.mainSrv,
		Logger:     c.Log,
	})
	if err != nil {
		ra.spawned.Close(ctx)
		store.Close()
		return nil, err
	}
	return ra, nil
}

// Close stops gracefully: the card goes offline, then DISCONNECT.
func (ra *Agent) Close(ctx context.Context) error {
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

// Kill drops both connections as a crash would.
func (ra *Agent) Kill() {
	ra.main.Kill()
	ra.spawned.Kill()
	ra.mainSrv.Close(context.Background())
	ra.spawnedSrv.Close(context.Background())
	ra.store.Close()
}
