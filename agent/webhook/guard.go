package webhook

import (
	"net"
	"net/netip"
	"syscall"
)

// policy is the address policy of A2A v1.0 §13.2 as configured.
type policy struct {
	loopback, private bool
}

var (
	cgnat   = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598
	thisNet = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122 §3.2.1.3: "this network"
	nat64   = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052: an IPv4 address behind NAT64
	bcast   = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

// refusal is the error of an address the policy forbids.
type refusal struct {
	addr netip.Addr
	why  string
}

func (r *refusal) Error() string {
	return "address " + r.addr.String() + " is " + r.why
}

// check returns nil when ip may be dialled, else a *refusal saying why not.
func (p policy) check(ip netip.Addr) error {
	orig := ip
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	var why string
	switch {
	case !ip.IsValid():
		why = "not an IP address"
	case ip.IsUnspecified() || thisNet.Contains(ip):
		why = "unspecified"
	case ip.IsLoopback():
		if p.loopback {
			return nil
		}
		why = "loopback (AllowLoopback is off)"
	case ip.IsLinkLocalUnicast():
		why = "link-local"
	case ip.IsMulticast() || ip == bcast:
		why = "multicast or broadcast"
	case ip.IsPrivate():
		if p.private {
			return nil
		}
		why = "private (AllowPrivate is off)"
	case cgnat.Contains(ip):
		if p.private {
			return nil
		}
		why = "carrier-grade NAT (AllowPrivate is off)"
	default:
		return nil
	}
	return &refusal{addr: orig, why: why}
}

// control is the net.Dialer Control function: it sees the address about to
// be connected, after name resolution, so a name resolving to a forbidden
// address (DNS rebinding included) is refused before any packet is sent.
func (p policy) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &refusal{why: "not an IP address"}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &refusal{why: "not an IP address"}
	}
	return p.check(ip)
}
