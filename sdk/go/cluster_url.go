package baton

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// clusterScheme starts the URL of a Redis Cluster: its seed nodes, comma-separated.
const clusterScheme = "redis+cluster://"

// clusterURLForm is the form a redis+cluster:// URL must have (quoted in its errors).
const clusterURLForm = "(redis+cluster://host:port[,host:port...])"

// clusterURL is a parsed redis+cluster://[user:password@]host:port[,host:port...].
type clusterURL struct {
	username, password string
	seeds              []string // "host:port", in the URL's order
}

// parseClusterURL parses a redis+cluster:// URL with the rules and words of the C++ core
// (src/broker/redis_endpoint.cpp): a seed without a port takes 6379, no /db (a cluster has only
// db 0), and no ?options (set go-redis options with WithRedisOptions). Errors never echo the
// password.
func parseClusterURL(raw string) (*clusterURL, *Error) {
	rest := strings.TrimPrefix(raw, clusterScheme)
	if strings.Contains(rest, "/") {
		return nil, urlError("redis+cluster:// takes no /db (a cluster has only db 0)")
	}
	if strings.Contains(rest, "?") {
		return nil, urlError("redis+cluster:// takes no ?options (set them with WithRedisOptions) " + clusterURLForm)
	}
	out := &clusterURL{}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo := rest[:at]
		rest = rest[at+1:]
		user, password, _ := strings.Cut(userinfo, ":")
		var err1, err2 error
		out.username, err1 = url.PathUnescape(user)
		out.password, err2 = url.PathUnescape(password)
		if err1 != nil || err2 != nil {
			return nil, urlError("user and password must be percent-encoded (bad '%' escape)")
		}
	}
	for i, seed := range strings.Split(rest, ",") {
		host, port, rule := splitSeed(seed)
		if rule != "" {
			return nil, urlError("seed " + strconv.Itoa(i+1) + ": " + rule + " " + clusterURLForm)
		}
		out.seeds = append(out.seeds, net.JoinHostPort(host, port))
	}
	return out, nil
}

// splitSeed splits "host[:port]" or "[v6]:port"; rule says what is wrong, if anything.
func splitSeed(seed string) (host, port, rule string) {
	if strings.HasPrefix(seed, "[") {
		end := strings.Index(seed, "]")
		if end < 0 {
			return "", "", "unterminated IPv6 address '['"
		}
		host = seed[1:end]
		after := seed[end+1:]
		if after != "" {
			if after[0] != ':' {
				return "", "", "expected ':port' after the IPv6 address"
			}
			port = after[1:]
		}
	} else if colon := strings.LastIndex(seed, ":"); colon >= 0 {
		host, port = seed[:colon], seed[colon+1:]
	} else {
		host = seed
	}
	if host == "" {
		return "", "", "missing host"
	}
	if port == "" {
		return host, "6379", ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '+' {
		return "", "", "port must be 1..65535 (got '" + port + "')"
	}
	return host, port, ""
}

// urlError is the invalid_argument error of a bad redis_url.
func urlError(rule string) *Error {
	return &Error{Op: "connect", Code: CodeInvalidArgument, Field: "redis_url", Message: rule}
}
