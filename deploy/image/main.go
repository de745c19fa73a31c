// Command image builds Hookline's container image without a container daemon: `make image` runs it and
// writes dist/hookline-image.tar, which `docker load` and `podman load` read.
//
// The tarball is an OCI image layout (oci-layout, index.json, blobs/sha256/...) whose index.json names one
// multi-platform image index (linux/amd64 and linux/arm64), tagged hookline:latest through the annotations
// containerd (Docker's image store) and Podman read. A Docker-style manifest.json sits beside it for Docker's
// older image store, which reads only that file and so can take a single platform: linux/amd64.
//
// Each platform's image is built from scratch with one layer: the static server binary as /hookline (its
// entrypoint; time zone data is compiled into it), the static command line (cmd/hookline) as
// /usr/local/bin/hookline (on the image's PATH, for `docker exec <container> hookline tail`), the build
// machine's CA bundle at /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates) and an empty /tmp. No
// shell, no /etc/passwd: the image runs as uid/gid 65532. It is reproducible: every file time is the commit's time, owners are
// 0:0, modes fixed, entries sorted, and the image's creation time is the commit's, so two builds of one
// commit with one toolchain and one CA bundle give the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image promises; the tests check each.
const (
	Entrypoint = "/hookline"
	CLI        = "/usr/local/bin/hookline"
	CABundle   = "/etc/ssl/certs/ca-certificates.crt"
	User       = "65532:65532"
	Port       = "8080/tcp"
	versionPkg = "github.com/hookline/hookline/internal/version"
	// The command line may not import internal/ (it is built on the public SDK alone): its version and
	// commit are variables of its main package.
	cliVersionPkg = "main"
	defaultRepo   = "https://github.com/hookline/hookline"
)

// Platforms are the ones the image index holds, in this order.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Options say what to build and where.
type Options struct {
	Root    string // the repository's top directory
	Out     string // the tarball to write
	Tag     string // name:tag the loaded image gets
	Version string // org.opencontainers.image.version and `server version`; empty: git describe
	Source  string // org.opencontainers.image.source
	CAFile  string // the CA bundle copied into the image
	Log     io.Writer
}

// Result describes what was built.
type Result struct {
	Index   v1.Hash // digest of the multi-platform image index: the image's identity
	Commit  string
	Created time.Time // the commit's time
	Version string
}

func main() {
	var o Options
	flag.StringVar(&o.Root, "root", ".", "the repository's top directory")
	flag.StringVar(&o.Out, "o", "dist/hookline-image.tar", "the image tarball to write")
	flag.StringVar(&o.Tag, "tag", "hookline:latest", "the name:tag the loaded image gets")
	flag.StringVar(&o.Version, "version", "", "the version (default: git describe --tags --always --dirty)")
	flag.StringVar(&o.Source, "source", defaultRepo, "the source repository label")
	flag.StringVar(&o.CAFile, "ca", CABundle, "the CA bundle to copy into the image (Debian's ca-certificates)")
	flag.Parse()
	o.Log = os.Stderr
	res, err := Build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s %s (commit %s, created %s)\n", o.Out, o.Tag, res.Index, res.Commit, res.Created.Format(time.RFC3339))
}

// Build cross-compiles the server for every platform and writes the image tarball.
func Build(ctx context.Context, o Options) (Result, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return Result{}, err
	}
	res, err := describe(ctx, root, o.Version)
	if err != nil {
		return res, err
	}
	ca, err := os.ReadFile(o.CAFile)
	if err != nil {
		return res, fmt.Errorf("the CA bundle (on Debian: apt-get install ca-certificates): %w", err)
	}
	name, tag, ok := strings.Cut(o.Tag, ":")
	if !ok || name == "" || tag == "" || strings.Contains(tag, "/") {
		return res, fmt.Errorf("-tag %q: want name:tag", o.Tag)
	}

	work, err := os.MkdirTemp("", "hookline-image-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(work)

	index, images, err := buildIndex(ctx, root, work, ca, res, o)
	if err != nil {
		return res, err
	}
	if res.Index, err = index.Digest(); err != nil {
		return res, err
	}
	dir := filepath.Join(work, "layout")
	if err := writeLayout(dir, index, images[0], name, o.Tag); err != nil {
		return res, err
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return res, err
	}
	return res, tarDir(dir, o.Out, res.Created)
}

// describe is what the image says of its source: the commit, its time (the image's creation time, so two
// builds of one commit agree) and the version (git describe unless given).
func describe(ctx context.Context, root, version string) (Result, error) {
	var res Result
	var err error
	if res.Commit, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return res, err
	}
	secs, err := git(ctx, root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return res, err
	}
	unix, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return res, fmt.Errorf("commit time %q: %w", secs, err)
	}
	res.Created = time.Unix(unix, 0).UTC()
	res.Version = version
	if res.Version == "" {
		if res.Version, err = git(ctx, root, "describe", "--tags", "--always", "--dirty"); err != nil {
			return res, err
		}
	}
	return res, nil
}

// buildIndex compiles the server and the command line for each of Platforms in work and returns the
// multi-platform image index and its images, in the order of Platforms.
func buildIndex(ctx context.Context, root, work string, ca []byte, res Result, o Options) (v1.ImageIndex, []v1.Image, error) {
	labels := map[string]string{
		"org.opencontainers.image.title":    "Hookline",
		"org.opencontainers.image.version":  res.Version,
		"org.opencontainers.image.revision": res.Commit,
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.created":  res.Created.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var images []v1.Image
	for _, p := range Platforms {
		bin := filepath.Join(work, "hookline-"+p.OS+"-"+p.Architecture)
		cli := filepath.Join(work, "hookline-cli-"+p.OS+"-"+p.Architecture)
		if o.Log != nil {
			fmt.Fprintf(o.Log, "image: building the server and the command line for %s/%s\n", p.OS, p.Architecture)
		}
		if err := compile(ctx, root, p, "./cmd/server", versionPkg, res.Version, res.Commit, bin); err != nil {
			return nil, nil, err
		}
		if err := compile(ctx, root, p, "./cmd/hookline", cliVersionPkg, res.Version, res.Commit, cli); err != nil {
			return nil, nil, err
		}
		img, err := platformImage(p, bin, cli, ca, res.Created, labels)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s: %w", p.OS, p.Architecture, err)
		}
		images = append(images, img)
		pp := p
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pp}})
	}
	return index, images, nil
}

// writeLayout writes the OCI image layout of index, named tag (whose name part is name), into dir, with the
// manifest.json of Docker's older image store for first.
func writeLayout(dir string, index v1.ImageIndex, first v1.Image, name, tag string) error {
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd (Docker 25+ with its image store) names the image after io.containerd.image.name; Podman
	// (containers/image) after org.opencontainers.image.ref.name, which the OCI spec lets be a full reference.
	full := "docker.io/library/" + tag
	if strings.Contains(name, "/") {
		full = tag
	}
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          full,
		"org.opencontainers.image.ref.name": full,
	})); err != nil {
		return err
	}
	manifest, err := dockerManifest(first, tag)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644)
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// compile builds the static binary of the main package pkg for p, its version and commit stamped into
// the package stamp (Version and Commit for internal/version, version and commit for a main package): no
// cgo (scratch has no libc), -trimpath (no build machine paths), no VCS stamping (the commit is passed
// explicitly and an uncommitted file must not change it).
func compile(ctx context.Context, root string, p v1.Platform, pkg, stamp, version, commit, out string) error {
	v, c := "Version", "Commit"
	if stamp == "main" {
		v, c = "version", "commit"
	}
	ldflags := fmt.Sprintf("-s -w -X %s.%s=%s -X %s.%s=%s", stamp, v, version, stamp, c, commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w\n%s", p.OS, p.Architecture, err, b)
	}
	return nil
}

// platformImage is the image of one platform: one layer, and a config saying how to run it.
func platformImage(p v1.Platform, bin, cli string, ca []byte, created time.Time, labels map[string]string) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	cliBinary, err := os.ReadFile(cli)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(binary, cliBinary, ca, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "deploy/image: the hookline server binary, the hookline command line and the CA bundle, from scratch",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint:   []string{Entrypoint},
		User:         User,
		ExposedPorts: map[string]struct{}{Port: {}},
		Labels:       labels,
		WorkingDir:   "/",
		// The server reads every setting from the environment; these only make the defaults explicit. PATH
		// finds the command line for `docker exec <container> hookline ...` (runtimes differ on a default).
		Env:        []string{"HOOKLINE_ADDR=:8080", "HOOKLINE_LOG_FORMAT=json", "PATH=" + path.Dir(CLI)},
		StopSignal: "SIGTERM",
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the layer's tar: directories first, sorted, fixed owners, modes and times.
func rootfs(binary, cli, ca []byte, modTime time.Time) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		body []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CABundle, "/"), mode: 0o644, body: ca},
		{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, body: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CLI, "/"), mode: 0o755, body: cli},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: modTime, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dockerManifest is the manifest.json of `docker save`, which Docker's older image store loads: the
// config and layers by their paths in the same blobs/ the OCI layout has.
func dockerManifest(img v1.Image, tag string) ([]byte, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		paths = append(paths, "blobs/"+d.Algorithm+"/"+d.Hex)
	}
	return json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: "blobs/" + cfg.Algorithm + "/" + cfg.Hex, RepoTags: []string{tag}, Layers: paths}})
}

// tarDir writes dir as a tarball with sorted entries, 0:0 owners, modes 0755/0644 and one time.
func tarDir(dir, out string, modTime time.Time) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			names = append(names, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, path := range names {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: modTime, Mode: 0o644, Typeflag: tar.TypeReg, Size: info.Size(), Format: tar.FormatPAX}
		if info.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.IsDir() {
			src, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
