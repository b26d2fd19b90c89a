package requester

import "time"

// CallOption adjusts one call.
type CallOption func(*callOpts)

type callOpts struct {
	target Target
	bearer string
	expiry time.Duration
}

func buildOpts(opts []CallOption) callOpts {
	if len(opts) == 0 {
		// Without options o would still escape to the heap (each option
		// takes its address).
		return callOpts{}
	}
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// To names the agent or pool a call goes to. Over MQTT every call needs
// one, except an operation on a task the Client has routed before: that one
// goes where the task's latest reply said (after a handover), whatever To
// names. Over HTTP the client is bound to one endpoint and To is ignored.
func To(t Target) CallOption { return func(o *callOpts) { o.target = t } }

// ToAgent is To(Target{Agent: id}).
func ToAgent(id string) CallOption { return To(Target{Agent: id}) }

// ToPool is To(Target{Pool: id}): over MQTT a shared pool whose members
// take turns; the member that answers serves the task from then on.
func ToPool(id string) CallOption { return To(Target{Pool: id}) }

// WithBearer sends an OAuth 2.0 access token (a2a-authorization over MQTT,
// the Authorization header over HTTP). Transports never log it.
func WithBearer(token string) CallOption { return func(o *callOpts) { o.bearer = token } }

// WithMessageExpiry sets the MQTT Message Expiry of the request: a
// responder that gets it later answers request_expired. It must be longer
// than the retry profile's first-reply timeout. HTTP ignores it.
func WithMessageExpiry(d time.Duration) CallOption {
	return func(o *callOpts) { o.expiry = d }
}
