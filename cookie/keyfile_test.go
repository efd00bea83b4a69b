package cookie_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/waitroom/waitroom/cookie"
)

func TestParseKeys(t *testing.T) {
	sec := func(b byte) []byte { return bytes.Repeat([]byte{b}, cookie.SecretLen) }
	std := base64.StdEncoding.EncodeToString(sec(0xfb)) // holds '+' and '/'... and '='
	rawStd := base64.RawStdEncoding.EncodeToString(sec(0xfb))
	url := base64.URLEncoding.EncodeToString(sec(0xfb)) // holds '-' and '_'
	rawURL := base64.RawURLEncoding.EncodeToString(sec(0xfb))
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	long := base64.StdEncoding.EncodeToString(make([]byte, 33))

	tests := []struct {
		name    string
		file    string
		want    []cookie.Key
		wantErr string // substring; "" means success
	}{
		{"one key parses", "1 " + std + "\n", []cookie.Key{{ID: 1, Secret: sec(0xfb)}}, ""},
		{"a file without a final newline parses", "1 " + std, []cookie.Key{{ID: 1, Secret: sec(0xfb)}}, ""},
		{"keys keep their order, the sealing key first", "9 " + std + "\n3 " + url + "\n",
			[]cookie.Key{{ID: 9, Secret: sec(0xfb)}, {ID: 3, Secret: sec(0xfb)}}, ""},
		{"standard, URL-safe, padded and unpadded base64 are all accepted",
			"1 " + std + "\n2 " + rawStd + "\n3 " + url + "\n4 " + rawURL + "\n",
			[]cookie.Key{{ID: 1, Secret: sec(0xfb)}, {ID: 2, Secret: sec(0xfb)}, {ID: 3, Secret: sec(0xfb)}, {ID: 4, Secret: sec(0xfb)}}, ""},
		{"ids 0 and 255 are accepted", "0 " + std + "\n255 " + url + "\n",
			[]cookie.Key{{ID: 0, Secret: sec(0xfb)}, {ID: 255, Secret: sec(0xfb)}}, ""},
		{"comments, blank lines, tabs, CRLF and trailing comments are ignored",
			"# keys for the shop\r\n\r\n   \n\t# indented comment\n 7\t" + std + "  # current\r\n#8 " + url + "\n",
			[]cookie.Key{{ID: 7, Secret: sec(0xfb)}}, ""},

		{"an empty file is an error", "", nil, "no keys"},
		{"a file of only comments is an error", "# nothing here\n\n", nil, "no keys"},
		{"an id above 255 is an error naming the line", "# c\n256 " + std + "\n", nil, "line 2: key id \"256\" is not a number from 0 to 255"},
		{"a negative id is an error", "-1 " + std, nil, "line 1: key id"},
		{"a non-numeric id is an error", "one " + std, nil, "line 1: key id"},
		{"a 16-byte secret is an error naming the line", "1 " + std + "\n\n2 " + short + "\n", nil, "line 3: secret is 16 bytes, want 32"},
		{"a 33-byte secret is an error", "1 " + long, nil, "line 1: secret is 33 bytes, want 32"},
		{"a secret that is not base64 is an error", "1 not*base64!", nil, "line 1: secret is not base64"},
		{"a secret mixing both alphabets is an error", "1 " + std[:10] + "-" + std[11:], nil, "line 1: secret is not base64"},
		{"a duplicate id is an error naming both lines", "4 " + std + "\n# x\n4 " + url + "\n", nil, "line 3: key id 4 already used on line 1"},
		{"a line with one field is an error", "1\n", nil, "line 1: want \"ID BASE64\", found 1 fields"},
		{"a line with three fields is an error", "1 " + std + " extra\n", nil, "line 1: want \"ID BASE64\", found 3 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cookie.ParseKeys([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseKeys error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), std[:20]) || strings.Contains(err.Error(), short[:20]) {
					t.Errorf("ParseKeys error %q echoes a secret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeys: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseKeys = %d keys, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].ID != tt.want[i].ID || !bytes.Equal(got[i].Secret, tt.want[i].Secret) {
					t.Errorf("key %d = id %d, want id %d (or secrets differ)", i, got[i].ID, tt.want[i].ID)
				}
			}
		})
	}
}

func TestGenerateKeyFile(t *testing.T) {
	t.Run("a generated key file parses to one key that builds a keyring", func(t *testing.T) {
		file, err := cookie.GenerateKeyFile(nil)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := cookie.ParseKeys(file)
		if err != nil {
			t.Fatalf("ParseKeys(GenerateKeyFile()): %v\n%s", err, file)
		}
		if len(keys) != 1 {
			t.Fatalf("got %d keys, want 1", len(keys))
		}
		ring := mustRing(t, keys...)
		if _, err := ring.Open(ring.Seal("shop", queued), "shop", testNow); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("two generated key files differ", func(t *testing.T) {
		a, _ := cookie.GenerateKeyFile(nil)
		b, _ := cookie.GenerateKeyFile(nil)
		if bytes.Equal(a, b) {
			t.Fatal("two generated key files are equal")
		}
	})
	t.Run("the secret comes from the given reader", func(t *testing.T) {
		file, err := cookie.GenerateKeyFile(bytes.NewReader(bytes.Repeat([]byte{0x42}, 64)))
		if err != nil {
			t.Fatal(err)
		}
		keys, err := cookie.ParseKeys(file)
		if err != nil || !bytes.Equal(keys[0].Secret, bytes.Repeat([]byte{0x42}, 32)) {
			t.Fatalf("ParseKeys = %v, %v", keys, err)
		}
	})
	t.Run("a failing reader is an error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := cookie.GenerateKeyFile(iotest.ErrReader(boom)); !errors.Is(err, boom) {
			t.Fatalf("GenerateKeyFile error = %v, want boom", err)
		}
	})
	t.Run("a short reader is an error", func(t *testing.T) {
		if _, err := cookie.GenerateKeyFile(bytes.NewReader(make([]byte, 31))); err == nil {
			t.Fatal("GenerateKeyFile succeeded on 31 bytes of randomness")
		}
	})
	t.Run("a formatted rotation file parses back in order", func(t *testing.T) {
		newer, err := cookie.GenerateKey(nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := cookie.ParseKeys(cookie.FormatKeyFile(newer, keyOld))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || keys[0].ID != 2 || !bytes.Equal(keys[0].Secret, newer.Secret) || keys[1].ID != 1 || !bytes.Equal(keys[1].Secret, keyOld.Secret) {
			t.Fatalf("ParseKeys(FormatKeyFile(new, old)) = %v", keys)
		}
	})
}
