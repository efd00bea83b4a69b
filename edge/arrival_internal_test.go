package edge

import (
	"testing"
	"time"
)

func TestArrivedInMinute(t *testing.T) {
	base := time.Unix(1_767_225_600, 0) // a minute boundary
	tests := []struct {
		name string
		at   time.Time
		want uint16
	}{
		{"a request on the minute arrives at 0", base, 0},
		{"a request 42.75 s in arrives at tenth 427", base.Add(42750 * time.Millisecond), 427},
		{"a request in the minute's last tenth arrives at 599", base.Add(59999 * time.Millisecond), 599},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := arrivedIn(tt.at); got != tt.want {
				t.Errorf("arrivedIn = %d, want %d", got, tt.want)
			}
		})
	}
}
