// The pod sandbox's pause process for brig's test cluster (scripts/k8s-up.sh), so nothing is
// pulled: it holds the pod's namespaces, reaps the children a shared PID namespace hands it,
// and exits on SIGINT/SIGTERM. Built static (CGO_ENABLED=0) into a FROM-scratch image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
