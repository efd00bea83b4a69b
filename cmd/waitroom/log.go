package main

import (
	"os"
	"time"

	"github.com/rs/zerolog"
)

func newLogger(level, format string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	var l zerolog.Logger
	if format == "json" {
		l = zerolog.New(os.Stderr)
	} else {
		l = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly})
	}
	return l.Level(lvl).With().Timestamp().Logger()
}
