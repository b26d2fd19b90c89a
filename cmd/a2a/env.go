package main

// Defaults and the environment: where a2a agent, send and watch find the
// broker, the org and the unit when no flag names them. A flag takes
// precedence over its environment variable, the variable over the default.

import (
	"flag"
	"os"
)

// The environment variables of the defaults; see envHelp.
const (
	envBroker = "A2A_BROKER"
	envOrg    = "A2A_ORG"
	envUnit   = "A2A_UNIT"
	envURL    = "A2A_URL"
)

// defaultBroker is the broker of a2a agent, send and watch when neither
// --broker nor $A2A_BROKER names one: mosquitto_pub's default.
const defaultBroker = "mqtt://localhost:1883"

// envHelp documents the environment (a2a -h).
const envHelp = `environment (a flag takes precedence over its variable, the variable over the default):
  A2A_BROKER      --broker of agent, send, watch, chat, card, get, cancel, list and
                  resubscribe (default ` + defaultBroker + `)
  A2A_URL         --url of send: the agent over HTTP (used when neither --url, --broker,
                  --to nor --pool is given); likewise of chat, get, cancel, list,
                  resubscribe (without --broker and --to) and card (without an ID)
  A2A_ORG         --org of the commands above (all but agent: after the ORG of a user
                  name ORG/UNIT/ID)
  A2A_UNIT        --unit of the commands above (all but agent: after the UNIT of a user
                  name ORG/UNIT/ID)
  A2A_TOKEN       the bearer token of send, chat, get, cancel, list and resubscribe
                  (--token-file FILE, --token)
  A2A_USERNAME    the broker user name (--username; after the broker URL's)
  A2A_PASSWORD    the broker password (--password-file FILE; after the broker URL's)
  A2A_TOPIC_ROOT  --topic-root (default $a2a/v1)
  A2A_STORE, A2A_QUEUE, A2A_DSN, A2A_PG: see a2a agent -h, a2a db -h, a2a demo -h
`

// brokerOf returns the broker URL of a command and where it comes from:
// --broker, else $A2A_BROKER, else defaultBroker.
func brokerOf(fs *flag.FlagSet, flagValue string) (url, from string) {
	if given(fs, "broker") {
		return flagValue, "--broker"
	}
	if v := os.Getenv(envBroker); v != "" {
		return v, "$" + envBroker
	}
	return defaultBroker, "the default broker"
}

// orgUnitFromEnv fills org and unit, when no flag and no user name gave
// them, from $A2A_ORG and $A2A_UNIT.
func orgUnitFromEnv(org, unit *string) {
	if *org == "" {
		*org = os.Getenv(envOrg)
	}
	if *unit == "" {
		*unit = os.Getenv(envUnit)
	}
}

// readerOrgUnit settles the org and unit of a command that reads a unit
// (card, watch): which it may do for another unit than its user name's
// (an ACL file can grant it), so the flags left empty are taken from the
// user name ORG/UNIT/ID, then from the environment, and no value given
// conflicts with the user name. Neither may be left empty.
func (c *connFlags) readerOrgUnit(brokerURL string, org, unit *string) error {
	user, _, err := c.user(brokerURL)
	if err != nil {
		return err
	}
	if o, u, _, ok := identityOf(user); ok {
		if *org == "" {
			*org = o
		}
		if *unit == "" {
			*unit = u
		}
	}
	orgUnitFromEnv(org, unit)
	return needOrgUnit(*org, *unit)
}

// senderOrgUnit settles the org, unit and requester id of a command that
// sends as the user (send, get, cancel, list, resubscribe, chat): from the
// flags, which must agree with the user name ORG/UNIT/ID when there is one
// (fromUsername), then the environment. Neither org nor unit may be left
// empty.
func (c *connFlags) senderOrgUnit(brokerURL string, org, unit, as *string) error {
	user, from, err := c.user(brokerURL)
	if err != nil {
		return err
	}
	if err := fromUsername(user, from, [3]string{"org", "unit", "as"}, [3]*string{org, unit, as}); err != nil {
		return err
	}
	orgUnitFromEnv(org, unit)
	return needOrgUnit(*org, *unit)
}

// needOrgUnit is the usage error of a command given no org or unit.
func needOrgUnit(org, unit string) error {
	switch {
	case org == "":
		return fail(exitUsage, "--org is required (or $%s)", envOrg)
	case unit == "":
		return fail(exitUsage, "--unit is required (or $%s)", envUnit)
	}
	return nil
}
