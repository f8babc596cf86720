module osr

go 1.26

require github.com/twmb/franz-go/pkg/sr v1.8.0
