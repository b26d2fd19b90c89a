package runtime

import "time"

// DateTime reports whether s is an RFC 3339 date-time, with the same
// verdicts as the JSON Schema engine used in the tests
// (santhosh-tekuri/jsonschema/v6): leap seconds at 23:59 UTC are accepted,
// and each two-character numeric field is read as strconv.Atoi reads it.
func DateTime(s string) bool {
	if len(s) < 20 || (s[10] != 'T' && s[10] != 't') {
		return false
	}
	if _, err := time.Parse("2006-01-02", s[:10]); err != nil {
		return false
	}
	t := s[11:]
	if len(t) < 9 || t[2] != ':' || t[5] != ':' {
		return false
	}
	h, ok1 := atoi2(t[0:2])
	m, ok2 := atoi2(t[3:5])
	sec, ok3 := atoi2(t[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 60 {
		return false
	}
	t = t[8:]
	if len(t) > 0 && t[0] == '.' {
		n := 1
		for n < len(t) && t[n] >= '0' && t[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		t = t[n:]
	}
	if t != "z" && t != "Z" {
		if len(t) != 6 || t[3] != ':' {
			return false
		}
		var sign int
		switch t[0] {
		case '+':
			sign = -1
		case '-':
			sign = 1
		default:
			return false
		}
		zh, ok1 := atoi2(t[1:3])
		zm, ok2 := atoi2(t[4:6])
		if !ok1 || !ok2 || zh > 23 || zm > 59 {
			return false
		}
		hm := h*60 + m + sign*(zh*60+zm)
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	if sec >= 60 && (h != 23 || m != 59) {
		return false
	}
	return true
}

// atoi2 reads a two-character field as strconv.Atoi would, refusing
// negative values: "07", "+7" and "-0" are accepted.
func atoi2(s string) (int, bool) {
	d := func(c byte) bool { return c >= '0' && c <= '9' }
	switch {
	case d(s[0]) && d(s[1]):
		return int(s[0]-'0')*10 + int(s[1]-'0'), true
	case s[0] == '+' && d(s[1]):
		return int(s[1] - '0'), true
	case s[0] == '-' && s[1] == '0':
		return 0, true
	}
	return 0, false
}

// UUID reports whether s has the 8-4-4-4-12 hexadecimal form of a UUID.
func UUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
