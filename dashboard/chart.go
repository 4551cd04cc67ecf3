package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// barChart is a vertical bar chart rendered on the server as SVG: a y axis
// with round ticks, one bar per label, x labels thinned so they do not
// overlap, and a <title> per bar (its tooltip and accessible text). Styling
// comes from the page's CSS classes, not inline styles, so the page's
// Content-Security-Policy needs no 'unsafe-inline'.
type barChart struct {
	ID     string // unique on the page: the id of the chart's <title>
	Title  string // accessible name
	Labels []string
	Values []float64
	// Format writes a value for ticks and tooltips; nil means formatCompact.
	Format func(float64) string
	// Width and Height of the viewBox; 0 means 640 x 220. The SVG scales to
	// its container's width.
	Width, Height int
}

// Chart geometry, in viewBox units.
const (
	chartTop    = 12
	chartRight  = 8
	chartBottom = 26
	chartLeft   = 58
	charWidth   = 6.6 // approximate width of one label character at font size 11
)

// niceTicks returns round tick values from 0 to at least max, at most
// about n+1 of them, spaced 1, 2 or 5 times a power of ten.
func niceTicks(max float64, n int) []float64 {
	if !(max > 0) || math.IsInf(max, 0) || n < 1 {
		return []float64{0, 1}
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(max/step-1e-9) * step
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		// Round away float noise (0.30000000000000004).
		v = math.Round(v/mag*1e6) / 1e6 * mag
		ticks = append(ticks, v)
		if v >= top-step*1e-9 {
			break
		}
	}
	return ticks
}

// SVG renders the chart. Labels and the title are escaped.
func (c barChart) SVG() template.HTML {
	w, h := c.Width, c.Height
	if w == 0 {
		w = 640
	}
	if h == 0 {
		h = 220
	}
	format := c.Format
	if format == nil {
		format = formatCompact
	}
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s" xmlns="http://www.w3.org/2000/svg">`, w, h, esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s">%s</title>`, esc(c.ID), esc(c.Title))
	maxV := 0.0
	for _, v := range c.Values {
		maxV = math.Max(maxV, v)
	}
	plotW, plotH := float64(w-chartLeft-chartRight), float64(h-chartTop-chartBottom)
	if len(c.Values) == 0 || maxV <= 0 {
		fmt.Fprintf(&b, `<text class="chart-empty" x="%d" y="%d" text-anchor="middle">No data for this period</text></svg>`, w/2, h/2)
		return template.HTML(b.String())
	}
	ticks := niceTicks(maxV, 4)
	top := ticks[len(ticks)-1]
	y := func(v float64) float64 { return chartTop + plotH - v/top*plotH }
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, chartLeft, w-chartRight, num(y(t)), num(y(t)))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, chartLeft-6, num(y(t)), esc(format(t)))
	}
	n := len(c.Values)
	slot := plotW / float64(n)
	gap := math.Min(slot*0.2, 6)
	// Show every k-th x label so that labels never overlap.
	longest := 1
	for _, l := range c.Labels {
		longest = max(longest, len([]rune(l)))
	}
	every := max(1, int(math.Ceil(float64(longest)*charWidth/slot*1.15)))
	for i, v := range c.Values {
		label := ""
		if i < len(c.Labels) {
			label = c.Labels[i]
		}
		x := float64(chartLeft) + float64(i)*slot + gap/2
		bh := math.Max(0, chartTop+plotH-y(v))
		if v > 0 && bh < 1 {
			bh = 1 // a non-zero value stays visible
		}
		fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s"><title>%s: %s</title></rect>`,
			num(x), num(chartTop+plotH-bh), num(slot-gap), num(bh), esc(label), esc(format(v)))
		if i%every == 0 {
			fmt.Fprintf(&b, `<text class="label" x="%s" y="%d" text-anchor="middle">%s</text>`, num(x+(slot-gap)/2), h-8, esc(label))
		}
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%s" y2="%s"/>`, chartLeft, w-chartRight, num(chartTop+plotH), num(chartTop+plotH))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// hbarChart is a horizontal bar chart (one row per label, label on the left),
// for categories with long names such as models.
type hbarChart struct {
	ID     string
	Title  string
	Labels []string
	Values []float64
	Format func(float64) string
	Width  int // 0 means 640; the height follows the number of rows
}

const (
	hbarRow   = 26
	hbarLabel = 180 // room for labels, in viewBox units
	hbarMaxCh = 26  // longer labels are cut (the tooltip has them whole)
)

// SVG renders the chart. Labels and the title are escaped.
func (c hbarChart) SVG() template.HTML {
	w := c.Width
	if w == 0 {
		w = 640
	}
	format := c.Format
	if format == nil {
		format = formatCompact
	}
	esc := template.HTMLEscapeString
	h := chartTop + max(1, len(c.Values))*hbarRow + chartBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s" xmlns="http://www.w3.org/2000/svg">`, w, h, esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s">%s</title>`, esc(c.ID), esc(c.Title))
	maxV := 0.0
	for _, v := range c.Values {
		maxV = math.Max(maxV, v)
	}
	if len(c.Values) == 0 || maxV <= 0 {
		fmt.Fprintf(&b, `<text class="chart-empty" x="%d" y="%d" text-anchor="middle">No data for this period</text></svg>`, w/2, h/2)
		return template.HTML(b.String())
	}
	ticks := niceTicks(maxV, 4)
	top := ticks[len(ticks)-1]
	plotW := float64(w - hbarLabel - chartRight - 40) // room for the value after the bar
	x := func(v float64) float64 { return hbarLabel + v/top*plotW }
	bottom := chartTop + len(c.Values)*hbarRow
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%d" y2="%d"/>`, num(x(t)), num(x(t)), chartTop, bottom)
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`, num(x(t)), bottom+16, esc(format(t)))
	}
	for i, v := range c.Values {
		label := ""
		if i < len(c.Labels) {
			label = c.Labels[i]
		}
		shown := label
		if r := []rune(shown); len(r) > hbarMaxCh {
			shown = string(r[:hbarMaxCh-1]) + "…"
		}
		y := chartTop + i*hbarRow
		bw := math.Max(0, x(v)-hbarLabel)
		if v > 0 && bw < 1 {
			bw = 1
		}
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, hbarLabel-8, y+hbarRow/2, esc(shown))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%s" height="%d"><title>%s: %s</title></rect>`,
			hbarLabel, y+4, num(bw), hbarRow-8, esc(label), esc(format(v)))
		fmt.Fprintf(&b, `<text class="value" x="%s" y="%d" dominant-baseline="middle">%s</text>`, num(hbarLabel+bw+4), y+hbarRow/2, esc(format(v)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, hbarLabel, hbarLabel, chartTop, bottom)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// num formats a coordinate with at most one decimal.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}
