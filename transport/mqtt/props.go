package mqtt

import (
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// userProps builds MQTT user properties from key/value pairs, leaving out
// empty values.
func userProps(kv ...string) paho.UserProperties {
	var out paho.UserProperties
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			out = append(out, paho.UserProperty{Key: kv[i], Value: kv[i+1]})
		}
	}
	return out
}

// statusProps are the properties of a card publication.
func statusProps(status, source string) paho.UserProperties {
	return userProps(mqttbind.PropStatus, status, mqttbind.PropStatusSource, source)
}

// propValues returns the values of every user property named key, in the
// order received (nil when there is none).
func propValues(p *paho.PublishProperties, key string) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, u := range p.User {
		if u.Key == key {
			out = append(out, u.Value)
		}
	}
	return out
}

// propFirst returns the value of the first user property named key, or "".
func propFirst(p *paho.PublishProperties, key string) string {
	if p == nil {
		return ""
	}
	for _, u := range p.User {
		if u.Key == key {
			return u.Value
		}
	}
	return ""
}
