package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a certificate for cn: a server certificate for 127.0.0.1,
// or a client certificate.
func (ca *testCA) issue(t testing.TB, cn string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsConnect connects over TLS with the client certificate (none when
// nil) and returns the CONNACK's reason code, or the error.
func tlsConnect(t testing.TB, addr string, ca *testCA, cert *tls.Certificate, cp *paho.Connect) (byte, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	pc := paho.NewClient(paho.ClientConfig{Conn: conn})
	cp.KeepAlive = 30
	ca2, err := pc.Connect(testContext(t), cp)
	if ca2 == nil {
		_ = conn.Close()
		<-pc.Done()
		return 0, err
	}
	if err == nil {
		_ = pc.Disconnect(&paho.Disconnect{})
	} else {
		_ = conn.Close()
	}
	<-pc.Done()
	return ca2.ReasonCode, nil
}

// TestTLSClientCertificates: a verified client certificate authenticates
// its client, the Common Name being the user name; a client without one
// falls back to the password file when the broker has one.
func TestTLSClientCertificates(t *testing.T) {
	ca := newTestCA(t, "a2abind test CA")
	rogue := newTestCA(t, "rogue CA")
	server := ca.issue(t, "broker", true)
	echoCert := ca.issue(t, userEcho, false)
	rogueCert := rogue.issue(t, userEcho, false)
	noCN := ca.issue(t, "", false)

	t.Run("certificates only", func(t *testing.T) {
		b := startBroker(t, Config{TLS: &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: ca.pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}})
		if !strings.HasPrefix(b.URL(), "mqtts://") {
			t.Errorf("URL() = %s, want mqtts://", b.URL())
		}
		for _, c := range []struct {
			name    string
			cert    *tls.Certificate
			cp      *paho.Connect
			want    byte
			wantErr bool
		}{
			{"its own Client ID", &echoCert, &paho.Connect{ClientID: userEcho, CleanStart: true}, rcSuccess, false},
			{"a password is ignored", &echoCert, &paho.Connect{ClientID: userEcho, CleanStart: true, Username: userMallory,
				UsernameFlag: true, Password: []byte("x"), PasswordFlag: true}, rcSuccess, false},
			{"another agent's Client ID", &echoCert, &paho.Connect{ClientID: userMallory, CleanStart: true}, rcNotAuthorized, false},
			{"a certificate without Common Name", &noCN, &paho.Connect{ClientID: userEcho, CleanStart: true}, rcNotAuthorized, false},
			{"no certificate", nil, &paho.Connect{ClientID: userEcho, CleanStart: true}, 0, true},
			{"a certificate of another CA", &rogueCert, &paho.Connect{ClientID: userEcho, CleanStart: true}, 0, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				got, err := tlsConnect(t, b.Addr(), ca, c.cert, c.cp)
				if c.wantErr {
					if err == nil {
						t.Errorf("connected (CONNACK %#x), want the TLS handshake refused", got)
					}
					return
				}
				if err != nil || got != c.want {
					t.Errorf("CONNACK %#x, %v; want %#x", got, err, c.want)
				}
			})
		}
	})

	t.Run("certificates or passwords", func(t *testing.T) {
		b := startBroker(t, Config{PasswordFile: writePasswordFile(t, userMallory), TLS: &tls.Config{
			Certificates: []tls.Certificate{server}, ClientCAs: ca.pool, ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12}})
		if got, err := tlsConnect(t, b.Addr(), ca, &echoCert, &paho.Connect{ClientID: userEcho, CleanStart: true}); err != nil || got != rcSuccess {
			t.Errorf("with a certificate: CONNACK %#x, %v", got, err)
		}
		if got, err := tlsConnect(t, b.Addr(), ca, nil, loginAs(userMallory)); err != nil || got != rcSuccess {
			t.Errorf("with a password: CONNACK %#x, %v", got, err)
		}
		if got, err := tlsConnect(t, b.Addr(), ca, nil, &paho.Connect{ClientID: userEcho, CleanStart: true}); err != nil || got != rcNotAuthorized {
			t.Errorf("with neither: CONNACK %#x, %v; want 0x87", got, err)
		}
	})

	t.Run("unverified client certificates refused", func(t *testing.T) {
		for _, auth := range []tls.ClientAuthType{tls.RequestClientCert, tls.RequireAnyClientCert} {
			b, err := Start(testContext(t), Config{TLS: &tls.Config{Certificates: []tls.Certificate{server}, ClientAuth: auth}})
			if err == nil {
				b.Close()
				t.Errorf("ClientAuth %v: Start succeeded", auth)
			}
		}
		if b, err := Start(testContext(t), Config{TLS: &tls.Config{}}); err == nil {
			b.Close()
			t.Errorf("TLS without a certificate: Start succeeded")
		}
	})
}
