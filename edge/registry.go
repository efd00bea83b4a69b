package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/edge/canon"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/roomreg"
)

// Room settings are replicated registers (package roomreg): every node
// rebuilds its room table from them within one gossip round and one
// allocation tick (250 ms).

// rooms lists the rooms in force, by name.
func (s *Server) rooms() []*room {
	t := s.table.Load()
	names := slices.Sorted(maps.Keys(t.rooms))
	out := make([]*room, len(names))
	for i, n := range names {
		out[i] = t.rooms[n]
	}
	return out
}

// room finds a room by name.
func (s *Server) room(name string) *room { return s.table.Load().rooms[name] }

// Rooms are the settings of the rooms in force, by name: the room API
// lists them and the webhooks watch them. A room's settings are never
// changed in place (a change replaces them whole), so a caller may keep
// them, and must not change them.
func (s *Server) Rooms() []*config.Room {
	rms := s.rooms()
	out := make([]*config.Room, len(rms))
	for i, rm := range rms {
		out[i] = rm.cfg
	}
	return out
}

// Room is the settings of the named room in force (see Rooms), nil for a
// room the node does not have.
func (s *Server) Room(name string) *config.Room {
	if rm := s.room(name); rm != nil {
		return rm.cfg
	}
	return nil
}

// CheckRoom fills in rc's defaults and checks it as the config would be
// with rc in place: the room's own rules and the rules across rooms
// (routes, cookie names). A room that passes can be stored (StoreRoom).
func (s *Server) CheckRoom(rc *config.Room) error {
	rc.ApplyDefaults()
	return s.validateWith(*rc)
}

// StoreRoom stores rc, checked with CheckRoom, in its room's register,
// which gossip carries to every node, and applies it on this node before
// it returns.
func (s *Server) StoreRoom(rc *config.Room) error {
	raw, err := json.Marshal(rc)
	if err != nil {
		return fmt.Errorf("encode room: %w", err)
	}
	s.node.SetRegister(roomreg.Name(rc.Name), raw)
	s.noteSource(rc.Name, SourceAPI)
	s.applyNow()
	return nil
}

// DeleteRoom deletes the named room across the ring, and on this node
// before it returns; false for a room the node does not have.
func (s *Server) DeleteRoom(name string) bool {
	if s.room(name) == nil {
		return false
	}
	s.node.SetRegister(roomreg.Name(name), nil)
	s.applyNow()
	return true
}

// validateWith checks rc as the config would be with rc in place: the room's
// own rules and the rules across rooms (routes, cookie names).
func (s *Server) validateWith(rc config.Room) error {
	c := *s.cfg
	c.Rooms = nil
	for _, rm := range s.rooms() {
		if rm.name != rc.Name {
			c.Rooms = append(c.Rooms, *rm.cfg)
		}
	}
	c.Rooms = append(c.Rooms, rc)
	return c.Validate()
}

// applyNow rebuilds the room table at once, so that the writer's own node
// applies its change before answering.
func (s *Server) applyNow() {
	s.tableMu.Lock()
	defer s.tableMu.Unlock()
	s.syncRoomsLocked(s.ringNow())
}

// syncRooms rebuilds the room table when any room register changed.
func (s *Server) syncRooms(now time.Time) {
	s.tableMu.Lock()
	defer s.tableMu.Unlock()
	s.syncRoomsLocked(now)
}

func (s *Server) syncRoomsLocked(now time.Time) {
	regs := s.node.Registers(roomreg.Prefix)
	if s.seen != nil && roomreg.Same(s.seen, regs) {
		return
	}
	old := s.table.Load()
	t := &roomTable{rooms: map[string]*room{}}
	taken := map[route]string{}
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		reg := regs[name]
		roomName := strings.TrimPrefix(name, roomreg.Prefix)
		if len(reg.Value) == 0 {
			continue // deleted
		}
		prev := old.rooms[roomName]
		if prev != nil && bytes.Equal(prev.raw, reg.Value) {
			t.rooms[roomName] = prev
			continue
		}
		rm, err := s.buildRoom(roomName, reg.Value)
		if err != nil {
			// A bad change must not take a room down: keep what was in
			// force. Admin writes are validated first and peers' writes
			// before they merge (checkRoomRegister), so this only happens
			// with settings this node cannot build.
			s.log.Error().Err(err).Str("room", roomName).Msg("room settings from the cluster refused; keeping the previous ones")
			if prev != nil {
				t.rooms[roomName] = prev
			}
			continue
		}
		rm.takeOver(prev, now)
		if prev == nil {
			s.log.Info().Str("room", roomName).Msg("room created")
		} else {
			s.log.Info().Str("room", roomName).Msg("room settings changed")
		}
		t.rooms[roomName] = rm
	}
	for name := range old.rooms {
		if t.rooms[name] == nil {
			s.log.Info().Str("room", name).Msg("room deleted")
		}
	}
	// Routes, most specific first. Two rooms created concurrently on
	// different nodes may claim the same route; the first by name keeps it.
	for _, name := range slices.Sorted(maps.Keys(t.rooms)) {
		rm := t.rooms[name]
		for _, rt := range rm.cfg.Routes() {
			r := route{host: canon.RouteHost(rt.Host), path: canon.RoutePath(rt.Path), room: rm}
			key := route{host: r.host, path: r.path}
			if other, dup := taken[key]; dup {
				s.log.Error().Str("room", name).Str("route", rt.String()).Str("owner", other).Msg("route already belongs to another room; ignored")
				continue
			}
			taken[key] = name
			t.routes = append(t.routes, r)
		}
	}
	slices.SortStableFunc(t.routes, func(a, b route) int {
		if (a.host != "") != (b.host != "") {
			if a.host != "" {
				return -1
			}
			return 1
		}
		return len(b.path) - len(a.path)
	})
	s.table.Store(t)
	s.seen = regs
}

// buildRoom decodes and validates a room register and builds the room.
func (s *Server) buildRoom(name string, raw []byte) (*room, error) {
	rc, err := s.decodeRoom(name, raw)
	if err != nil {
		return nil, err
	}
	rm, err := newRoom(s, rc)
	if err != nil {
		return nil, err
	}
	rm.raw = raw
	return rm, nil
}

// decodeRoom decodes a room register (roomreg.Decode) and validates it as
// the admin API and the config file validate rooms. A room without an
// origin takes the node's; one without a turnstile_secret takes the secret
// of the room of the same name in the node's own config (registers
// gossiped without a key leave the secret out).
func (s *Server) decodeRoom(name string, raw []byte) (*config.Room, error) {
	rc, err := roomreg.Decode(name, raw)
	if err != nil {
		return nil, err
	}
	if rc.Origin == "" {
		rc.Origin = s.cfg.Origin
	}
	if rc.TurnstileSecret == "" {
		for i := range s.cfg.Rooms {
			if s.cfg.Rooms[i].Name == name {
				rc.TurnstileSecret = s.cfg.Rooms[i].TurnstileSecret
			}
		}
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("room %q: %w", name, err)
	}
	return rc, nil
}

// checkRoomRegister vets a room register a peer sends before it is merged:
// the settings are decoded and validated as the admin API and the config
// file validate theirs (see decodeRoom). A deleted room (empty value) and
// registers that are not rooms pass.
func (s *Server) checkRoomRegister(name string, value []byte) error {
	roomName, ok := strings.CutPrefix(name, roomreg.Prefix)
	if !ok || len(value) == 0 {
		return nil
	}
	_, err := s.decodeRoom(roomName, value)
	return err
}
