// Command registry serves the drill's Schema Registry: the Confluent REST subset that
// kaudit, the drill's apps and Confluent's Python client (the formats scenario) use
// (POST /subjects/{s}/versions, POST /subjects/{s}, GET /schemas/ids/{id}, GET
// /subjects/{s}/versions/{v}, ?format=serialized), from fakeregistry, on 127.0.0.1 only.
// Schemas live in memory for the life of the process.
//
//	go run ./testdata/kafka/registry -addr 127.0.0.1:19081
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/kaudit/kaudit/internal/fakeregistry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:19081", "listen address (keep it on 127.0.0.1)")
	flag.Parse()
	log.Printf("schema registry listening on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, fakeregistry.New()))
}
