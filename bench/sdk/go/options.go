package main

import "github.com/redis/go-redis/v9"

// redisOptions is go-redis' options type (for baton.WithRedisOptions).
type redisOptions = redis.Options
