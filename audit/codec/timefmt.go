package codec

import "time"

// appendTimestamp writes an instant given as seconds and nanoseconds since
// the epoch as RFC 3339 in UTC, the fraction trimmed of trailing zeros,
// with a "Z" unless local: the same text as time.Time.Format with
// RFC3339Nano, without its cost. Years outside 0000–9999 go through the
// time package.
func appendTimestamp(b []byte, sec int64, nsec int64, local bool) []byte {
	days := floorDiv(sec, 86400)
	secOfDay := sec - days*86400
	y, m, d := civil(days)
	if y < 0 || y > 9999 {
		t := time.Unix(sec, nsec).UTC()
		if local {
			return t.AppendFormat(b, "2006-01-02T15:04:05.999999999")
		}
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, m, 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, secOfDay/3600, 2)
	b = append(b, ':')
	b = appendDigits(b, secOfDay/60%60, 2)
	b = append(b, ':')
	b = appendDigits(b, secOfDay%60, 2)
	if nsec != 0 {
		b = append(b, '.')
		digits := 9
		for nsec%10 == 0 {
			nsec /= 10
			digits--
		}
		b = appendDigits(b, nsec, digits)
	}
	if !local {
		b = append(b, 'Z')
	}
	return b
}

func appendDigits(b []byte, v int64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || width > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	return append(b, buf[i:]...)
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
