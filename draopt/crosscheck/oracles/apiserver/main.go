// Command apiserver runs a real kube-apiserver, linked from Kubernetes' released modules, on an
// etcd embedded in the same process, for draopt's live-cluster tests (tests/test_live_cluster.py).
//
// It serves HTTPS on 127.0.0.1 with a certificate authority and static tokens it makes at start,
// writes a kubeconfig naming two contexts (an administrator, and a user with no permission at
// all), prints one line "ready <kubeconfig> <server URL>" on stdout and runs until its standard
// input closes or it receives SIGTERM or SIGINT. Arguments after "--" go to kube-apiserver as
// they are (feature gates, runtime-config).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	dir := flag.String("dir", "", "work directory (etcd data, certificates, kubeconfig); a temporary one when empty")
	flag.Parse()
	if err := run(*dir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}

func run(dir string, extra []string) error {
	if dir == "" {
		made, err := os.MkdirTemp("", "draopt-apiserver-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(made)
		dir = made
	}
	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("embedded etcd: %w", err)
	}
	defer stopEtcd()
	creds, err := writeCredentials(dir)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(port)
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(append(serverFlags(dir, etcdURL, port, creds), extra...))
	failed := make(chan error, 1)
	go func() { failed <- cmd.Execute() }()
	if err := waitReady(server, creds, failed); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, creds); err != nil {
		return err
	}
	fmt.Printf("ready %s %s\n", kubeconfig, server)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stdinClosed:
		return nil
	case err := <-failed: // SIGTERM or SIGINT end the server's context: Execute returns
		if err != nil && !isCanceled(err) {
			return err
		}
		return nil
	}
}

func serverFlags(dir, etcdURL string, port int, creds credentials) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "serving"),
		"--tls-cert-file=" + creds.servingCert,
		"--tls-private-key-file=" + creds.servingKey,
		"--token-auth-file=" + creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + creds.serviceAccountKey,
		"--service-account-signing-key-file=" + creds.serviceAccountKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		// No controller manager runs here to make each namespace's default ServiceAccount.
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--v=0",
	}
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

func isCanceled(err error) bool {
	return err == context.Canceled
}

// deadline for the server to answer /readyz: a cold start on a loaded 2-core machine is slow.
const readyTimeout = 3 * time.Minute
