package codec

import "time"

// appendTimestamp writes an instant given as seconds and nanoseconds since
// the epoch as RFC 3339 in UTC, the fraction trimmed of trailing zeros,
// with a "Z" unless local: the same text as time.Time.Format with
// RFC3339Nano, without its cost. Years outside 0000–9999 go through the
// time package.
func appendTimestamp(b []byte, sec int64, nsec int64, local bool) []byte {
	days := floorDiv(sec, 86400)
	secOfDay := uint32(sec - days*86400)
	y, m, d := civil(days)
	if y < 0 || y > 9999 {
		t := time.Unix(sec, nsec).UTC()
		if local {
			return t.AppendFormat(b, "2006-01-02T15:04:05.999999999")
		}
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	var buf [31]byte // 2006-01-02T15:04:05.999999999Z
	putDate(buf[:], y, m, d)
	buf[10] = 'T'
	put2(buf[11:], secOfDay/3600)
	buf[13] = ':'
	put2(buf[14:], secOfDay/60%60)
	buf[16] = ':'
	put2(buf[17:], secOfDay%60)
	n := 19
	if nsec != 0 {
		buf[19] = '.'
		ns, digits := uint32(nsec), 9
		switch { // most instants are whole millis or micros
		case ns%1_000_000 == 0:
			ns, digits = ns/1_000_000, 3
		case ns%1000 == 0:
			ns, digits = ns/1000, 6
		}
		n = 20 + digits
		for i := n - 1; i >= 20; i-- {
			buf[i] = byte('0' + ns%10)
			ns /= 10
		}
		for buf[n-1] == '0' {
			n--
		}
	}
	if !local {
		buf[n] = 'Z'
		n++
	}
	return append(b, buf[:n]...)
}

// put2 writes v (below 100) as two digits.
// putDate writes y-m-d (a year within 0000–9999) as 2006-01-02 into b[:10].
func putDate(b []byte, y, m, d int64) {
	put2(b[0:], uint32(y)/100)
	put2(b[2:], uint32(y)%100)
	b[4] = '-'
	put2(b[5:], uint32(m))
	b[7] = '-'
	put2(b[8:], uint32(d))
}

func put2(b []byte, v uint32) {
	b[0] = byte('0' + v/10)
	b[1] = byte('0' + v%10)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's days_from_civil inverse).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
