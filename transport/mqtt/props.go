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

// propMap turns user properties into a map; a key given twice keeps its
// values joined for the checks to refuse.
func propMap(p *paho.PublishProperties) map[string][]string {
	m := map[string][]string{}
	if p == nil {
		return m
	}
	for _, u := range p.User {
		m[u.Key] = append(m[u.Key], u.Value)
	}
	return m
}
