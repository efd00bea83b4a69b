package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRoomsPageCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantReq  string // method and path the node is sent
		wantBody string // its JSON body, "" for none
		wantErr  string
	}{
		{name: "message sets the room's message", args: []string{"message", "shop", "Sold out at 7"}, wantReq: "POST /rooms/shop/message", wantBody: `{"message":"Sold out at 7"}`},
		{name: "message --clear sets it empty", args: []string{"message", "shop", "--clear"}, wantReq: "POST /rooms/shop/message", wantBody: `{"message":""}`},
		{name: "message without text or --clear is refused", args: []string{"message", "shop"}, wantErr: "--clear"},
		{name: "message with text and --clear is refused", args: []string{"message", "shop", "x", "--clear"}, wantErr: "not both"},
		{name: "close closes the room", args: []string{"close", "shop"}, wantReq: "POST /rooms/shop/close"},
		{name: "open reopens it", args: []string{"open", "shop"}, wantReq: "POST /rooms/shop/open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotReq, gotBody string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotReq, gotBody = r.Method+" "+r.URL.Path, strings.TrimSpace(string(b))
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]string{"name": "shop"})
			}))
			defer srv.Close()
			cmd := newRooms()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"--addr", srv.URL}, tt.args...))
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				if gotReq != "" {
					t.Errorf("the node was sent %s", gotReq)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if gotReq != tt.wantReq || (tt.wantBody != "" && gotBody != tt.wantBody) {
				t.Errorf("node got %s %s, want %s %s", gotReq, gotBody, tt.wantReq, tt.wantBody)
			}
		})
	}
}
