package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The two users of the kubeconfig: an administrator, and one RBAC grants nothing (to see a
// client's "forbidden").
const (
	adminToken  = "draopt-admin-token"
	nobodyToken = "draopt-nobody-token"
)

type credentials struct {
	caPEM             []byte
	servingCert       string
	servingKey        string
	tokenFile         string
	serviceAccountKey string
}

func writeCredentials(dir string) (credentials, error) {
	var creds credentials
	certDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return creds, err
	}
	caKey, caCert, caDER, err := newCA()
	if err != nil {
		return creds, err
	}
	creds.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return creds, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, template, caCert, &servingKey.PublicKey, caKey)
	if err != nil {
		return creds, err
	}
	creds.servingCert = filepath.Join(certDir, "serving.crt")
	creds.servingKey = filepath.Join(certDir, "serving.key")
	creds.serviceAccountKey = filepath.Join(certDir, "service-account.key")
	creds.tokenFile = filepath.Join(certDir, "tokens.csv")
	if err := writePEM(creds.servingCert, "CERTIFICATE", servingDER); err != nil {
		return creds, err
	}
	if err := writeKey(creds.servingKey, servingKey); err != nil {
		return creds, err
	}
	accountKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return creds, err
	}
	if err := writeKey(creds.serviceAccountKey, accountKey); err != nil {
		return creds, err
	}
	tokens := adminToken + ",admin,admin-uid,system:masters\n" + nobodyToken + ",nobody,nobody-uid\n"
	return creds, os.WriteFile(creds.tokenFile, []byte(tokens), 0o600)
}

func newCA() (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "draopt-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, der, err
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

// waitReady polls /readyz as the administrator until it answers 200.
func waitReady(server string, creds credentials, failed <-chan error) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(creds.caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		select {
		case err := <-failed:
			return fmt.Errorf("kube-apiserver stopped before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s", readyTimeout)
		case <-time.After(200 * time.Millisecond):
		}
		request, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		request.Header.Set("Authorization", "Bearer "+adminToken)
		response, err := client.Do(request)
		if err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// writeKubeconfig writes a kubeconfig with contexts "admin" (current) and "nobody".
func writeKubeconfig(path, server string, creds credentials) error {
	ca := base64.StdEncoding.EncodeToString(creds.caPEM)
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: draopt-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
- name: nobody
  user:
    token: %s
contexts:
- name: admin
  context:
    cluster: draopt-test
    user: admin
- name: nobody
  context:
    cluster: draopt-test
    user: nobody
current-context: admin
`, server, ca, adminToken, nobodyToken)
	return os.WriteFile(path, []byte(text), 0o600)
}
