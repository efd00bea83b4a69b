package browsertest_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/edge/config"
)

// consoleState is what the test reads from the console's page.
type consoleState struct {
	Conn    string   `json:"conn"`
	Ring    []string `json:"ring"`   // "name state" per row
	Heard   []string `json:"heard"`  // each row's "last heard" cell
	Shop    string   `json:"shop"`   // the rooms table's row of the shop
	Nodes   string   `json:"nodes"`  // the room's "nodes this minute" table
	Notice  string   `json:"notice"` // what the last action said
	Charts  int      `json:"charts"`
	Buckets string   `json:"buckets"`
}

const readConsoleJS = `(() => {
  const t = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ""; };
  return {
    conn: t("#conn"),
    ring: [...document.querySelectorAll("#ring tbody tr")].map(r => r.cells[0].textContent + " " + r.cells[1].textContent),
    heard: [...document.querySelectorAll("#ring tbody tr")].map(r => r.cells[3].textContent),
    shop: t('#rooms tr[data-room="shop"]'),
    nodes: [...document.querySelectorAll("#room-shop .cols table")].map(x => x.textContent).join(" | "),
    notice: t("#notice"),
    charts: document.querySelectorAll("#room-shop .chart > svg").length,
    buckets: t("#room-shop .cols"),
  };
})()`

// TestConsoleShowsTheRingAndStopsTheRoomWithTheToken: the console on one
// node of a three-node ring loads in a real browser, shows every member and
// the room's figures merged from the visitors the other two nodes saw, and
// updates them live; its emergency stop is refused without the admin token
// and, with it, stops the room on every node.
func TestConsoleShowsTheRingAndStopsTheRoomWithTheToken(t *testing.T) {
	t.Parallel()
	chromium(t) // skip before starting anything
	org := startOrigin(t)
	const token = "console-test-token"
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gossipKey := filepath.Join(t.TempDir(), "gossip.key")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gossipKey, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ringNode := func(name string, seeds ...string) *node {
		return newNode(t, org.URL, nil, func(c *config.Config) {
			c.Node = name
			c.Seeds = seeds
			c.AdminTokenFile = tokenFile
			c.AdminReadOpen = true
			c.GossipKeyFile = gossipKey
		})
	}
	a := ringNode("ring-a")
	a.serve(t)
	b, c := ringNode("ring-b", a.srv.Node().Addr()), ringNode("ring-c", a.srv.Node().Addr())
	baseB, baseC := b.serve(t), c.serve(t)

	// Two visitors, on the other two nodes: one takes the room's only
	// slot, the other waits.
	for _, base := range []string{baseB, baseC} {
		newGoVisitor(t, nil).get(t, base+"/")
	}

	ctx := startBrowser(t)
	consoleURL := "http://" + a.srv.AdminAddr() + "/dashboard"
	if err := chromedp.Do(ctx, chromedp.Navigate(consoleURL)); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	read := func() (consoleState, error) { return chromedp.Run(ctx, chromedp.Evaluate[consoleState](readConsoleJS)) }
	var st consoleState
	err := poll(ctx, 20*time.Second, func() (bool, error) {
		var err error
		st, err = read()
		return err == nil && st.Conn == "live" && len(st.Ring) == 3 &&
			strings.Contains(st.Nodes, "ring-b") && strings.Contains(st.Nodes, "ring-c") && st.Charts == 4, err
	})
	if err != nil {
		t.Fatalf("the console did not show the three-node ring and the shop's traffic from ring-b and ring-c: %v; it shows %+v", err, st)
	}
	for _, row := range st.Ring {
		if !strings.HasSuffix(row, " alive") {
			t.Errorf("ring row %q, want every member alive", row)
		}
	}
	if heard := strings.Join(st.Heard, "|"); strings.Count(heard, " s ago") != 2 {
		t.Errorf("last heard cells %q, want the two peers heard some seconds ago", st.Heard)
	}
	// ring-b admitted its visitor; ring-c too, when it had not yet heard.
	if !strings.Contains(st.Shop, "1 / 1") && !strings.Contains(st.Shop, "2 / 1") {
		t.Errorf("the shop's row %q, want the visitors the other nodes admitted (1 or 2 of 1 active)", st.Shop)
	}

	// Live: a visitor arriving on ring-b shows in the figures on ring-a's
	// console without a reload.
	before := st.Nodes
	newGoVisitor(t, nil).get(t, baseB+"/")
	if err := poll(ctx, 10*time.Second, func() (bool, error) {
		var err error
		st, err = read()
		return err == nil && st.Nodes != before, err
	}); err != nil {
		t.Errorf("the console did not update after a new arrival: %v; still %q", err, st.Nodes)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	saveScreenshot(t, "console.png", png)

	stopped := func(n *node) bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+n.srv.AdminAddr()+"/rooms/"+roomName, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /rooms/%s: %v", roomName, err)
		}
		defer resp.Body.Close()
		var room struct {
			Stopped bool `json:"stopped"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&room); err != nil {
			t.Fatalf("GET /rooms/%s: %v", roomName, err)
		}
		return room.Stopped
	}
	click := func(t *testing.T, sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	waitNotice := func(t *testing.T, prefix string) {
		t.Helper()
		if err := poll(ctx, 10*time.Second, func() (bool, error) {
			var err error
			st, err = read()
			return err == nil && strings.HasPrefix(st.Notice, prefix), err
		}); err != nil {
			t.Fatalf("after the click the console says %q, want %q…: %v", st.Notice, prefix, err)
		}
	}

	t.Run("without the token the emergency stop is refused", func(t *testing.T) {
		click(t, `#room-shop button[data-act="stop"]`)
		waitNotice(t, "Refused: stop on shop needs the admin token")
		if stopped(a) {
			t.Error("the room is stopped although the console had no token")
		}
	})
	t.Run("with the token the emergency stop stops the room on every node", func(t *testing.T) {
		if err := chromedp.Do(ctx,
			chromedp.SendKeys("#token", token),
			chromedp.Click(`#tokenform button[type="submit"]`),
		); err != nil {
			t.Fatalf("enter the token: %v", err)
		}
		click(t, `#room-shop button[data-act="stop"]`)
		waitNotice(t, "Done: stop on shop")
		ok := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if ok = stopped(c); ok {
				break
			}
		}
		if !ok {
			t.Fatal("ring-c never saw the room stopped")
		}
		if err := poll(ctx, 10*time.Second, func() (bool, error) {
			var err error
			st, err = read()
			return err == nil && strings.Contains(st.Shop, "emergency stop"), err
		}); err != nil {
			t.Errorf("the console's row of the shop %q, want it to say emergency stop: %v", st.Shop, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil {
			saveScreenshot(t, "console-stopped.png", png)
		}
	})
}
