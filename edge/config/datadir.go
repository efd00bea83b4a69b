package config

import (
	"os"
	"path/filepath"
)

// DataDirOff as data_dir or --data-dir keeps no data directory: a restart
// then loses what the ring was told at run time unless a peer hands it
// back.
const DataDirOff = "off"

// DefaultDataDir is the data directory `waitroom serve` keeps when neither
// --data-dir nor data_dir names one: waitroom/data/NODE in the user's
// config directory (as the ACME cache is waitroom/acme there), one per
// node name so that nodes run side by side as one user keep theirs apart;
// "" when the user has no config directory.
func DefaultDataDir(node string) string {
	dir, err := os.UserConfigDir()
	if err != nil || node == "" {
		return ""
	}
	return filepath.Join(dir, "waitroom", "data", node)
}

// DataDirPath is the data directory c keeps, "" for none.
func (c *Config) DataDirPath() string {
	if c.DataDir == DataDirOff {
		return ""
	}
	return c.DataDir
}
