package i18n_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/policy"
)

func TestEveryLanguageHasEveryString(t *testing.T) {
	if len(i18n.Tags) != 17 {
		t.Errorf("%d languages, want Cloudflare's 17", len(i18n.Tags))
	}
	for _, tag := range i18n.Tags {
		t.Run(tag+" has every string with its placeholders", func(t *testing.T) {
			l := i18n.Get(tag)
			if l == nil {
				t.Fatal("missing")
			}
			for _, k := range i18n.Keys {
				if !l.Has(k) {
					t.Errorf("no %q", k)
				}
				s := l.S(k)
				if strings.ContainsAny(s, "{}") && k != "position" && k != "range" && k != "second" && k != "minute" && k != "hour" {
					t.Errorf("%s: stray brace in %q", k, s)
				}
				if strings.Contains(s, "[[") || strings.Contains(s, "<") {
					t.Errorf("%s: markup in %q", k, s)
				}
			}
			for _, want := range []struct{ key, slot string }{{"position", "{n}"}, {"range", "{lo}"}, {"range", "{hi}"}} {
				if !strings.Contains(l.S(want.key), want.slot) {
					t.Errorf("%s lacks %s: %q", want.key, want.slot, l.S(want.key))
				}
			}
			for _, n := range []int{1, 2, 3, 5, 11, 21, 22, 25, 59, 60, 61, 125} {
				w := l.Wait(n)
				if w == "" || strings.ContainsAny(w, "{}") {
					t.Errorf("Wait(%d) = %q", n, w)
				}
			}
			for _, n := range []int64{1, 2, 3, 5, 11, 21, 22, 25, 101, 1234} {
				p := l.Position(n)
				if p == "" || strings.ContainsAny(p, "{}") || p == l.Position(0) {
					t.Errorf("Position(%d) = %q", n, p)
				}
			}
			if l.Position(0) != l.S("position_next") {
				t.Errorf("Position(0) = %q, want %q", l.Position(0), l.S("position_next"))
			}
			if r := l.Span(120, 300); !strings.Contains(r, l.Wait(2)) || !strings.Contains(r, l.Wait(5)) {
				t.Errorf("Span(120, 300) = %q", r)
			}
			for _, n := range []int{1, 2, 3, 5, 11, 20, 21, 22, 40, 59} {
				w := l.Span(n, n)
				if w == "" || strings.ContainsAny(w, "{}") || w == l.Wait(1) || w == l.Wait(0) {
					t.Errorf("Span(%d, %d) = %q, want seconds", n, n, w)
				}
			}
			if w := l.Span(20, 60); !strings.Contains(w, l.Span(20, 20)) || !strings.Contains(w, l.Wait(1)) {
				t.Errorf("Span(20, 60) = %q, want seconds to a minute", w)
			}
			if (tag == "ar-EG" || tag == "fa-IR") != (l.Dir() == "rtl") {
				t.Errorf("direction %s", l.Dir())
			}
		})
	}
}

func TestEnglishWaitsAreThePolicys(t *testing.T) {
	en := i18n.English()
	for _, n := range []int{0, 1, 2, 59, 60, 61, 120, 121, 1439} {
		if got, want := en.Wait(n), policy.FormatWait(n); got != want {
			t.Errorf("Wait(%d) = %q, want %q as policy.FormatWait", n, got, want)
		}
	}
	for _, span := range [][2]int{{20, 20}, {20, 40}, {20, 60}, {40, 180}, {60, 60}, {120, 420}, {3600, 7500}} {
		if got, want := en.Span(span[0], span[1]), policy.FormatSpan(span[0], span[1]); got != want {
			t.Errorf("Span(%d, %d) = %q, want %q as policy.FormatSpan", span[0], span[1], got, want)
		}
	}
	if en.Unknown() != policy.UnknownWait {
		t.Errorf("Unknown() = %q, want %q", en.Unknown(), policy.UnknownWait)
	}
}

func TestPluralForms(t *testing.T) {
	tests := []struct {
		tag     string
		minutes int
		want    string
	}{
		{"ru-RU", 1, "1 минута"}, {"ru-RU", 3, "3 минуты"}, {"ru-RU", 5, "5 минут"}, {"ru-RU", 11, "11 минут"}, {"ru-RU", 21, "21 минута"},
		{"pl-PL", 1, "1 minuta"}, {"pl-PL", 22, "22 minuty"}, {"pl-PL", 12, "12 minut"},
		{"ar-EG", 1, "دقيقة واحدة"}, {"ar-EG", 2, "دقيقتان"}, {"ar-EG", 5, "5 دقائق"}, {"ar-EG", 15, "15 دقيقة"},
		{"ja-JP", 90, "1時間 30分"}, {"de-DE", 61, "1 Stunde 1 Minute"}, {"fr-FR", 1, "1 minute"},
	}
	for _, tt := range tests {
		t.Run(tt.tag+" writes "+tt.want, func(t *testing.T) {
			if got := i18n.Get(tt.tag).Wait(tt.minutes); got != tt.want {
				t.Errorf("Wait(%d) = %q, want %q", tt.minutes, got, tt.want)
			}
		})
	}
}

func TestSecondsSayTheNumberInItsForm(t *testing.T) {
	tests := []struct {
		tag     string
		seconds int
		want    string
	}{
		{"en-US", 1, "1 second"}, {"en-US", 20, "20 seconds"}, {"en-US", 20 + 40, "1 minute"},
		{"ru-RU", 1, "1 секунда"}, {"ru-RU", 3, "3 секунды"}, {"ru-RU", 20, "20 секунд"}, {"ru-RU", 21, "21 секунда"}, {"ru-RU", 40, "40 секунд"},
		{"pl-PL", 1, "1 sekunda"}, {"pl-PL", 22, "22 sekundy"}, {"pl-PL", 20, "20 sekund"},
		{"ar-EG", 1, "ثانية واحدة"}, {"ar-EG", 2, "ثانيتان"}, {"ar-EG", 5, "5 ثوانٍ"}, {"ar-EG", 20, "20 ثانية"},
		{"ja-JP", 40, "40秒"}, {"de-DE", 20, "20 Sekunden"}, {"fr-FR", 40, "40 secondes"},
	}
	for _, tt := range tests {
		t.Run(tt.tag+" writes "+tt.want, func(t *testing.T) {
			if got := i18n.Get(tt.tag).Span(tt.seconds, tt.seconds); got != tt.want {
				t.Errorf("Span(%d, %d) = %q, want %q", tt.seconds, tt.seconds, got, tt.want)
			}
		})
	}
}

func TestPlacesInLineSayTheNumberInItsForm(t *testing.T) {
	tests := []struct {
		tag  string
		n    int64
		want string
	}{
		{"en-US", 0, "You are next."}, {"en-US", 1, "1 person is ahead of you."}, {"en-US", 2, "About 2 people are ahead of you."},
		{"fr-FR", 1, "1 personne est devant vous."}, {"fr-FR", 2, "Environ 2 personnes sont devant vous."},
		{"de-DE", 1, "Vor Ihnen ist 1 Person."}, {"de-DE", 0, "Sie sind als Nächstes an der Reihe."},
		{"ru-RU", 1, "Перед вами 1 человек."}, {"ru-RU", 3, "Перед вами примерно 3 человека."}, {"ru-RU", 5, "Перед вами примерно 5 человек."},
		{"ru-RU", 11, "Перед вами примерно 11 человек."}, {"ru-RU", 22, "Перед вами примерно 22 человека."},
		{"pl-PL", 1, "Przed Tobą jest 1 osoba."}, {"pl-PL", 3, "Przed Tobą są 3 osoby."}, {"pl-PL", 12, "Przed Tobą jest około 12 osób."},
		{"pl-PL", 22, "Przed Tobą są 22 osoby."}, {"pl-PL", 25, "Przed Tobą jest około 25 osób."},
		{"ar-EG", 1, "أمامك شخص واحد."}, {"ar-EG", 2, "أمامك شخصان."}, {"ar-EG", 5, "أمامك نحو 5 أشخاص."},
		{"ar-EG", 15, "أمامك نحو 15 شخصًا."}, {"ar-EG", 100, "أمامك نحو 100 شخص."},
		{"ja-JP", 3, "あなたの前に約3人が並んでいます。"},
	}
	for _, tt := range tests {
		t.Run(tt.tag+" writes "+tt.want, func(t *testing.T) {
			if got := i18n.Get(tt.tag).Position(tt.n); got != tt.want {
				t.Errorf("Position(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	es := i18n.Get("es-ES")
	tests := []struct{ accept, want string }{
		{"ja", "ja-JP"}, {"ja-JP,en;q=0.5", "ja-JP"}, {"ar", "ar-EG"}, {"ar-SA", "ar-EG"},
		{"pt-PT,pt;q=0.9", "pt-BR"}, {"pt", "pt-BR"}, {"zh-Hant", "zh-TW"}, {"zh-HK", "zh-TW"},
		{"zh", "zh-CN"}, {"zh-SG", "zh-CN"}, {"de-AT,de;q=0.9", "de-DE"}, {"fa", "fa-IR"},
		{"fi-FI", "es-ES"}, {"", "es-ES"}, {"!!garbage;;", "es-ES"}, {"*", "es-ES"}, {"en;q=abc", "es-ES"}, {strings.Repeat("de-DE,", 200), "es-ES"}, {"fr-CA, en;q=0.8", "fr-FR"},
	}
	for _, tt := range tests {
		t.Run("Accept-Language "+tt.accept+" gets "+tt.want, func(t *testing.T) {
			if got := i18n.Match(tt.accept, es); got.Tag != tt.want {
				t.Errorf("got %s", got.Tag)
			}
		})
	}
}
