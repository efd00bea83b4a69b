package config

// The access log: its settings' checks and where a relative path points,
// kept together here. What writes it is package edge/accesslog.

import (
	"path/filepath"
	"strings"
)

// AccessLogStdout is the access_log value that writes the log to standard
// output.
const AccessLogStdout = "stdout"

// The access_log_format values.
const (
	AccessLogJSON   = "json"
	AccessLogCommon = "common"
)

// validateAccessLog checks access_log and access_log_format.
func (c *Config) validateAccessLog(p *problems) {
	switch c.AccessLogFormat {
	case "", AccessLogJSON, AccessLogCommon:
	default:
		p.add("access_log_format", "%q must be json (the default: one JSON object per line) or common (the common log format, waitroom's fields after it)", c.AccessLogFormat)
	}
	if c.AccessLogFormat != "" && c.AccessLog == "" {
		p.add("access_log_format", "%q needs access_log: a file's path or stdout (the access log is off without it)", c.AccessLogFormat)
	}
	if c.AccessLog != "" && c.AccessLog != AccessLogStdout && (strings.HasSuffix(c.AccessLog, "/") || strings.ContainsRune(c.AccessLog, 0)) {
		p.add("access_log", "%q must be a file's path or stdout", c.AccessLog)
	}
}

// resolveAccessLogPath makes a relative access_log path relative to the
// config file's directory, as every other path in the file.
func (c *Config) resolveAccessLogPath(dir string) {
	if c.AccessLog != "" && c.AccessLog != AccessLogStdout && !filepath.IsAbs(c.AccessLog) {
		c.AccessLog = filepath.Join(dir, c.AccessLog)
	}
}
