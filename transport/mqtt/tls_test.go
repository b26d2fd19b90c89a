package mqtt

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and the certificate.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "a2abind test broker"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "broker.crt"), filepath.Join(dir, "broker.key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, cert
}

// TestAgentAndClientOverTLS: with an mqtts:// broker URL and a TLS
// configuration that trusts the broker, an agent and a client talk through
// mosquitto's TLS listener (TLS connections are not wrapped in the read
// buffer: crypto/tls buffers its records itself); a client that does not
// trust the broker's certificate gets ErrBrokerUnreachable.
func TestAgentAndClientOverTLS(t *testing.T) {
	certPath, keyPath, cert := selfSigned(t, t.TempDir())
	b := mqtttest.StartMosquitto(t, mqtttest.WithMosquittoConfig("certfile "+certPath, "keyfile "+keyPath))
	url := "mqtts://" + b.Addr()
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	trusted := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}

	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		return turn.Complete(ctx, "over TLS")
	}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	startAgent(t, AgentConfig{Connection: Connection{Broker: url, TLS: trusted}, Org: "acme", Unit: "lab", ID: "secure", Card: testCard("Secure"), Server: srv})
	c := startClient(t, url, "tls-client", func(cfg *ClientConfig) { cfg.TLS = trusted })
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: newMessage("hello")}, requester.To(requester.Target{Agent: "secure"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("got %+v, want a completed task", res)
	}

	_, err = NewClient(testCtx(t), ClientConfig{
		Connection: Connection{Broker: url, TLS: &tls.Config{MinVersion: tls.VersionTLS12}, ConnectTimeout: time.Second},
		Org:        "acme",
		Unit:       "lab",
		ID:         "untrusting",
	})
	if !errors.Is(err, ErrBrokerUnreachable) {
		t.Fatalf("a client that does not trust the broker: err = %v, want ErrBrokerUnreachable", err)
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err = %v, want it to name the certificate problem", err)
	}
}
