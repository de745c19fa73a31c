package notify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// smtpServer is a real SMTP server (emersion/go-smtp) in the test process that records what it receives.
type smtpServer struct {
	Addr string
	Host string
	Port int

	mu       sync.Mutex
	msgs     []received
	failData int // DATA commands still to refuse with 451
	user     string
	pass     string
}

// received is one accepted message and how it came.
type received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
	User string
}

type serverOpts struct {
	// startTLS offers STARTTLS with cert; implicit serves TLS from the first byte (smtps).
	startTLS, implicit bool
	cert               *tls.Certificate
	// user and pass, when set, are the one account AUTH PLAIN accepts.
	user, pass string
}

func startSMTP(t *testing.T, o serverOpts) *smtpServer {
	t.Helper()
	s := &smtpServer{user: o.user, pass: o.pass}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	var ln net.Listener
	var err error
	switch {
	case o.implicit:
		ln, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*o.cert}})
	default:
		if o.startTLS {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*o.cert}}
		}
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.Addr = ln.Addr().String()
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Host = host
	s.Port = atoi(t, port)
	return s
}

func (s *smtpServer) Messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

func (s *smtpServer) FailNextData(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failData = n
}

// NewSession implements smtp.Backend.
func (s *smtpServer) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &session{srv: s, conn: c, tls: isTLS}, nil
}

type session struct {
	srv  *smtpServer
	conn *smtp.Conn
	tls  bool
	user string
	from string
	to   []string
}

func (s *session) AuthMechanisms() []string {
	if s.srv.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.srv.user || password != s.srv.pass {
			return errors.New("invalid credentials")
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if s.srv.failData > 0 {
		s.srv.failData--
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.srv.msgs = append(s.srv.msgs, received{From: s.from, To: s.to, Data: b, TLS: isTLS || s.tls, User: s.user})
	return nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

// testCert makes a self-signed certificate for 127.0.0.1 and a pool that trusts it.
func testCert(t *testing.T) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test smtp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
