// Package memsize estimates the heap held by values, so that caches can be
// bounded by bytes rather than by entry counts.
package memsize

import (
	"reflect"
	"runtime"
)

// sizeClasses are the Go allocator's small-object size classes
// (internal/runtime/gc.SizeClassToSize, unchanged since Go 1.21): an
// allocation takes the smallest class that fits it.
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	maxSmall = 32768
	pageSize = 8192
	// tinyMax: pointer-free allocations below it share 16-byte blocks, so
	// they cost about their own size.
	tinyMax = 16
)

// Alloc is the heap one allocation of n bytes occupies: n rounded up to its
// size class, or to whole pages for large objects.
func Alloc(n int) int64 {
	if n <= 0 {
		return 0
	}
	m := int64(n)
	if m > maxSmall {
		return (m + pageSize - 1) / pageSize * pageSize
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < m {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return sizeClasses[lo]
}

// String is the heap a string of n bytes occupies (pointer-free, so small
// ones go to the tiny allocator).
func String(n int) int64 {
	if n < tinyMax {
		return int64(max(n, 0))
	}
	return Alloc(n)
}

// Deep is the heap reachable from v through pointers, slices and strings,
// each allocation rounded to its size class; v itself is not counted unless
// it is a pointer (then its target is). It treats the value as a tree: a
// target reached twice is counted twice, and maps, channels, funcs and
// interfaces count only their header. That fits plain data such as the
// parser's model; strings set from constants are counted although they
// live outside the heap, a slight over-estimate.
func Deep(v any) int64 {
	if v == nil {
		return 0
	}
	return walk(reflect.ValueOf(v), 0)
}

// maxDepth stops a walk that would otherwise follow a cycle forever.
const maxDepth = 64

func walk(v reflect.Value, depth int) int64 {
	if depth > maxDepth {
		return 0
	}
	switch v.Kind() {
	case reflect.String:
		return String(v.Len())
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		return Alloc(int(e.Type().Size())) + walk(e, depth+1)
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		et := v.Type().Elem()
		n := Alloc(v.Cap() * int(et.Size()))
		if !scalar(et) {
			for i := range v.Len() {
				n += walk(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Array:
		if scalar(v.Type().Elem()) {
			return 0
		}
		var n int64
		for i := range v.Len() {
			n += walk(v.Index(i), depth+1)
		}
		return n
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			n += walk(v.Field(i), depth+1)
		}
		return n
	}
	return 0
}

// scalar reports whether values of type t hold no references at all.
func scalar(t reflect.Type) bool {
	k := t.Kind()
	return k >= reflect.Bool && k <= reflect.Complex128
}

// LiveHeap collects garbage twice (the second pass frees what the first
// one's finalizers released) and returns the heap bytes still in use: the
// measure that the size estimates are checked against.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
