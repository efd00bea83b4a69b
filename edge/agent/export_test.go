package agent

import "time"

// CheckCertificateFiles looks at the certificate files for a change now, as
// the next TLS connection after a second would, so that a test can hold
// what a reload did without waiting for that second. Test-only.
func (a *Agent) CheckCertificateFiles() {
	if a.tls != nil && a.tls.files != nil {
		a.tls.files.nextCheck.Store(0)
		a.tls.files.reloadIfChanged(time.Now())
	}
}
