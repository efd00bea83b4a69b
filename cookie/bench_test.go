package cookie_test

import (
	"testing"
)

// The benchmarks use a two-key ring, a realistic admitted token and a short
// room name, as the edge does on every request.

func BenchmarkSealOpen(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	b.ReportAllocs()
	for b.Loop() {
		v := ring.Seal("shop", admitted)
		if _, err := ring.Open(v, "shop", testNow); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	b.ReportAllocs()
	for b.Loop() {
		_ = ring.Seal("shop", admitted)
	}
}

func BenchmarkAppendSeal(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = ring.AppendSeal(buf[:0], "shop", admitted)
	}
}

func BenchmarkOpen(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	v := ring.Seal("shop", admitted)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Open(v, "shop", testNow); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenGarbage(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	v := ring.Seal("shop", admitted)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Open(v, "another-room", testNow); err == nil {
			b.Fatal("opened in the wrong room")
		}
	}
}

func BenchmarkSealOpenParallel(b *testing.B) {
	ring := mustRing(b, keyNew, keyOld)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v := ring.Seal("shop", admitted)
			if _, err := ring.Open(v, "shop", testNow); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
