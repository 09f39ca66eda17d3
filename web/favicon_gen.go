//go:build ignore

// Draws favicon.svg's shapes into favicon.ico (16 and 32 pixels, PNG
// inside), for browsers that ask for /favicon.ico and not the SVG.
// Run with `go generate ./web` after changing favicon.svg.
package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

var (
	blue  = color.NRGBA{0x24, 0x81, 0xcc, 0xff}
	white = color.NRGBA{0xff, 0xff, 0xff, 0xff}
)

// lines are favicon.svg's strokes in its 32-unit box: x0, x1, y.
var lines = [][3]float64{{8, 24, 10}, {8, 24, 16}, {8, 18, 22}}

const (
	radius = 7   // corner radius of the square
	stroke = 1.5 // half the stroke width
	sub    = 8   // samples per pixel side
)

// at is the colour at point (x, y) of the 32-unit box, or nil outside.
func at(x, y float64) *color.NRGBA {
	// Rounded square: the distance from the inner rectangle.
	dx := math.Max(math.Max(radius-x, x-(32-radius)), 0)
	dy := math.Max(math.Max(radius-y, y-(32-radius)), 0)
	if dx*dx+dy*dy > radius*radius {
		return nil
	}
	for _, l := range lines {
		cx := math.Min(math.Max(x, l[0]), l[1]) // round caps
		if (x-cx)*(x-cx)+(y-l[2])*(y-l[2]) <= stroke*stroke {
			return &white
		}
	}
	return &blue
}

func draw(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	scale := 32 / float64(size)
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, n float64
			for sy := 0; sy < sub; sy++ {
				for sx := 0; sx < sub; sx++ {
					c := at((float64(px)+(float64(sx)+0.5)/sub)*scale, (float64(py)+(float64(sy)+0.5)/sub)*scale)
					if c == nil {
						continue
					}
					r, g, b, n = r+float64(c.R), g+float64(c.G), b+float64(c.B), n+1
				}
			}
			if n > 0 {
				img.SetNRGBA(px, py, color.NRGBA{uint8(r / n), uint8(g / n), uint8(b / n), uint8(255 * n / (sub * sub))})
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		log.Fatal(err)
	}
	return buf.Bytes()
}

func main() {
	sizes := []int{16, 32}
	var images [][]byte
	for _, s := range sizes {
		images = append(images, draw(s))
	}
	var out bytes.Buffer
	le := func(v any) { _ = binary.Write(&out, binary.LittleEndian, v) }
	le([3]uint16{0, 1, uint16(len(sizes))}) // reserved, type icon, count
	offset := 6 + 16*len(sizes)
	for i, s := range sizes {
		le([4]uint8{uint8(s), uint8(s), 0, 0}) // width, height, palette, reserved
		le([2]uint16{1, 32})                   // planes, bits per pixel
		le([2]uint32{uint32(len(images[i])), uint32(offset)})
		offset += len(images[i])
	}
	for _, img := range images {
		out.Write(img)
	}
	if err := os.WriteFile("favicon.ico", out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
