// Command devdb starts (creating it if needed) the project-managed local
// PostgreSQL under <repo>/.data/postgres and prints the URL of its "hookline"
// database on stdout, e.g. DATABASE_URL=$(go run ./cmd/devdb). With -stop it
// stops that server instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hookline/hookline/internal/pgdev"
)

func main() {
	stop := flag.Bool("stop", false, "stop the server instead of starting it")
	dir := flag.String("dir", "", "data directory (default: <repo root>/.data/postgres, or ./.data/postgres outside the repo)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	if *dir == "" {
		*dir = filepath.Join(".data", "postgres")
		if root, err := pgdev.FindRepoRoot("."); err == nil {
			*dir = filepath.Join(root, ".data", "postgres")
		}
	}
	if *stop {
		if err := pgdev.Stop(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "devdb:", err)
			os.Exit(1)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url, err := pgdev.Ensure(ctx, *dir, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devdb:", err)
		os.Exit(1)
	}
	fmt.Println(url)
}
