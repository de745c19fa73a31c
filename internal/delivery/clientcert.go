package delivery

import (
	"bytes"
	"container/list"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// errClientCertUnusable is a client certificate the sender cannot load (the API checks it at save, so only
// a row written around the API gets here).
var errClientCertUnusable = errors.New("tls: the client certificate configured for this endpoint cannot be used; save it again")

// ClientCertificate is the certificate (PEM, the leaf first, then its intermediates) and private key (PEM)
// a subscription presents when its endpoint asks for one (mutual TLS).
type ClientCertificate struct {
	CertificatePEM string
	PrivateKeyPEM  string
}

// CertificateInfo is what answers show of a client certificate: never the key.
type CertificateInfo struct {
	Subject  string
	NotAfter time.Time
}

// CertificateError says which field of a client certificate is wrong ("certificate" or "private_key"),
// in words the customer may read. It never quotes the key.
type CertificateError struct {
	Field   string
	Message string
}

func (e *CertificateError) Error() string { return e.Field + ": " + e.Message }

// Limits of a client certificate as the API accepts it: a leaf and up to two intermediates, each field's PEM
// at most 16 KiB (a 4096-bit RSA chain of three is about 6 KiB; an 8192-bit RSA key in PEM about 6.3 KiB).
const (
	MaxClientCertificates = 3
	MaxClientCertPEMBytes = 16 << 10
)

// ParseClientCertificate checks a PEM chain and key as the API must at save: both parse, the chain holds at
// most MaxClientCertificates certificates, each field at most MaxClientCertPEMBytes, the key matches the
// leaf (the first certificate), and the leaf has not expired at now. It returns what answers show.
func ParseClientCertificate(certPEM, keyPEM string, now time.Time) (CertificateInfo, error) {
	certErr := func(format string, a ...any) error {
		return &CertificateError{Field: "certificate", Message: fmt.Sprintf(format, a...)}
	}
	keyErr := func(format string, a ...any) error {
		return &CertificateError{Field: "private_key", Message: fmt.Sprintf(format, a...)}
	}
	if len(certPEM) > MaxClientCertPEMBytes {
		return CertificateInfo{}, certErr("is %d bytes; at most %d KiB", len(certPEM), MaxClientCertPEMBytes>>10)
	}
	if len(keyPEM) > MaxClientCertPEMBytes {
		return CertificateInfo{}, keyErr("is %d bytes; at most %d KiB", len(keyPEM), MaxClientCertPEMBytes>>10)
	}
	chain, err := parseCertificateChain([]byte(certPEM))
	if err != nil {
		return CertificateInfo{}, &CertificateError{Field: "certificate", Message: err.Error()}
	}
	key, err := parsePrivateKey([]byte(keyPEM))
	if err != nil {
		return CertificateInfo{}, &CertificateError{Field: "private_key", Message: err.Error()}
	}
	leaf := chain[0]
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return CertificateInfo{}, keyErr("does not match the certificate (the first certificate of the chain must be the one issued for this key)")
	}
	if now.After(leaf.NotAfter) {
		return CertificateInfo{}, certErr("expired on %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	// What the sender will do with it: a key Go's TLS refuses (a too-short RSA key, say) is refused now.
	if _, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM)); err != nil {
		return CertificateInfo{}, keyErr("cannot be used for TLS with this certificate")
	}
	return CertificateInfo{Subject: leaf.Subject.String(), NotAfter: leaf.NotAfter.UTC()}, nil
}

// parseCertificateChain reads PEM CERTIFICATE blocks, the leaf first. Anything else in the field (a key
// pasted in the wrong box, stray text) is refused without quoting it.
func parseCertificateChain(data []byte) ([]*x509.Certificate, error) {
	var chain []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			if strings.Contains(block.Type, "PRIVATE KEY") {
				return nil, fmt.Errorf("holds a private key; put it in private_key and only certificates here")
			}
			return nil, fmt.Errorf("holds a PEM block of type %q; only CERTIFICATE blocks are accepted", limitText(block.Type, 40))
		}
		if len(chain) == MaxClientCertificates {
			return nil, fmt.Errorf("holds more than %d certificates; give the certificate and at most %d intermediates",
				MaxClientCertificates, MaxClientCertificates-1)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d of the chain cannot be parsed as X.509", len(chain)+1)
		}
		chain = append(chain, c)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		if len(chain) == 0 {
			return nil, fmt.Errorf("is not PEM: expected -----BEGIN CERTIFICATE-----")
		}
		return nil, fmt.Errorf("holds text after its last certificate that is not PEM")
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("holds no certificate: expected -----BEGIN CERTIFICATE-----")
	}
	return chain, nil
}

// parsePrivateKey reads one unencrypted PEM private key: PKCS #8, PKCS #1 (RSA) or SEC 1 (EC), the forms
// OpenSSL writes. An "EC PARAMETERS" block (openssl ecparam -genkey writes one first) is skipped.
func parsePrivateKey(data []byte) (crypto.Signer, error) {
	var keys []*pem.Block
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case block.Type == "EC PARAMETERS":
		case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
			return nil, fmt.Errorf("is encrypted; give it unencrypted (it is sealed at rest)")
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			keys = append(keys, block)
		case block.Type == "CERTIFICATE":
			return nil, fmt.Errorf("holds a certificate; put it in certificate and only the key here")
		default:
			return nil, fmt.Errorf("holds a PEM block of type %q; expected a PRIVATE KEY", limitText(block.Type, 40))
		}
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("is not PEM: expected -----BEGIN PRIVATE KEY-----")
	}
	switch len(keys) {
	case 0:
		return nil, fmt.Errorf("holds no key: expected -----BEGIN PRIVATE KEY-----")
	case 1:
	default:
		return nil, fmt.Errorf("holds %d keys; give only the certificate's", len(keys))
	}
	der := keys[0].Bytes
	var key any
	var err error
	switch keys[0].Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(der)
	default:
		key, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed as a %s", strings.ToLower(keys[0].Type))
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("is of a kind TLS cannot use; use an RSA, ECDSA or Ed25519 key")
	}
	return signer, nil
}

// limitText keeps at most n bytes of valid UTF-8 of s: a PEM type is the customer's text.
func limitText(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// clientCertTransports keeps a transport per client certificate: a transport's TLS configuration is fixed,
// so an endpoint that wants a certificate needs its own, and building one (parsing the key, a TLS session
// cache, keep-alive connections) per attempt would throw its connections away every time. The cache is
// bounded, least recently used out: a certificate seldom used costs a new handshake when it comes back.
type clientCertTransports struct {
	build func(cert *tls.Certificate) *clients
	max   int

	mu    sync.Mutex
	order *list.List // of *certTransport, the most recently used first
	byKey map[[sha256.Size]byte]*list.Element
}

type certTransport struct {
	key     [sha256.Size]byte
	clients *clients
}

// maxCertTransports bounds the transports kept for client certificates (each with its idle connections).
const maxCertTransports = 256

func newClientCertTransports(build func(cert *tls.Certificate) *clients, max int) *clientCertTransports {
	return &clientCertTransports{build: build, max: max, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

// certKey identifies a certificate and key: the lengths keep "ab"+"c" apart from "a"+"bc".
func certKey(c *ClientCertificate) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(c.CertificatePEM), c.CertificatePEM, len(c.PrivateKeyPEM), c.PrivateKeyPEM)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// clients are the clients whose transport presents c, built (its key parsed once) on first use.
func (ts *clientCertTransports) clients(c *ClientCertificate) (*clients, error) {
	key := certKey(c)
	ts.mu.Lock()
	if e, ok := ts.byKey[key]; ok {
		ts.order.MoveToFront(e)
		cl := e.Value.(*certTransport).clients
		ts.mu.Unlock()
		return cl, nil
	}
	ts.mu.Unlock()

	// Parsed outside the lock: an RSA key takes a while, and other certificates' attempts need not wait.
	pair, err := tls.X509KeyPair([]byte(c.CertificatePEM), []byte(c.PrivateKeyPEM))
	if err != nil {
		return nil, errClientCertUnusable
	}
	cl := ts.build(&pair)

	ts.mu.Lock()
	defer ts.mu.Unlock()
	if e, ok := ts.byKey[key]; ok { // built meanwhile by another attempt: keep the one already shared
		ts.order.MoveToFront(e)
		return e.Value.(*certTransport).clients, nil
	}
	ts.byKey[key] = ts.order.PushFront(&certTransport{key: key, clients: cl})
	for ts.order.Len() > ts.max {
		oldest := ts.order.Back()
		ts.order.Remove(oldest)
		ct := oldest.Value.(*certTransport)
		delete(ts.byKey, ct.key)
		// Attempts still running on it finish; its idle connections go now.
		ct.clients.transport.CloseIdleConnections()
	}
	return cl, nil
}

// closeIdle closes every kept transport's idle connections.
func (ts *clientCertTransports) closeIdle() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for e := ts.order.Front(); e != nil; e = e.Next() {
		e.Value.(*certTransport).clients.transport.CloseIdleConnections()
	}
}

// len is how many transports are kept (for tests).
func (ts *clientCertTransports) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.order.Len()
}
