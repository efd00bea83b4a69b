package api_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// A room as Cloudflare's API returns it (the result of GET
// /zones/{zone}/waiting_rooms/{id}, with its events from
// .../events added under "events", and an origin) is what
// `waitroom rooms apply -f` reads.
func TestParseRoomsTakesACloudflareExport(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cloudflare_room.json"))
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := api.ParseRooms(data)
	if err != nil {
		t.Fatalf("a Cloudflare export is refused: %v", err)
	}
	if len(rooms) != 1 {
		t.Fatalf("%d rooms, want 1", len(rooms))
	}
	r := rooms[0]
	c := &config.Config{Rooms: rooms}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("the export does not validate: %v", err)
	}
	r = c.Rooms[0]
	for _, ch := range []struct {
		name      string
		got, want any
	}{
		{"the language is kept", r.DefaultTemplateLanguage, "ja-JP"},
		{"the JSON answer is on", r.JSONResponseEnabled, true},
		{"the event is read", len(r.Events), 1},
		{"the event's queueing method is kept", r.Events[0].QueueingMethod, "random"},
		{"the event's shuffle is kept", r.Events[0].ShuffleAtEventStart, true},
	} {
		t.Run(ch.name, func(t *testing.T) {
			if ch.got != ch.want {
				t.Errorf("got %v, want %v", ch.got, ch.want)
			}
		})
	}
}
