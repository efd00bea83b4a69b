package edge

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
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
	t.Run("a token the counter rule moves to another bucket arrives when it moved", func(t *testing.T) {
		tok := cookie.Token{Bucket: 100, Arrived: 50, LastCheckIn: 100*60 + 7}
		rebucketed(&tok, 99)
		if tok.Arrived != 70 {
			t.Errorf("Arrived = %d, want 70", tok.Arrived)
		}
	})
	t.Run("a token kept in its bucket keeps its arrival", func(t *testing.T) {
		tok := cookie.Token{Bucket: 100, Arrived: 50, LastCheckIn: 105 * 60}
		rebucketed(&tok, 100)
		if tok.Arrived != 50 {
			t.Errorf("Arrived = %d, want 50", tok.Arrived)
		}
	})
}
