// The generator-headroom endpoint: the cheapest HTTP answer Go's net/http can give, so that a load
// generator driving it shows its own ceiling. It listens on $PGARENA_HOST:$PGARENA_PORT (host 127.0.0.1 when
// unset; the stack's namespace address under --netns) and answers every
// request with a fixed 2-byte body; nothing is computed, nothing touches a database.
package main

import (
	"log"
	"net/http"
	"os"
)

func main() {
	body := []byte("ok")
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	})
	host := os.Getenv("PGARENA_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	log.Fatal(http.ListenAndServe(host+":"+os.Getenv("PGARENA_PORT"), handler))
}
