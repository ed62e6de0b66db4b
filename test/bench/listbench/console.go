package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"
)

// consoleTimeout bounds one measurement of the console in the browser.
const consoleTimeout = 2 * time.Minute

// consoleFirstPage measures the web console's first page with n stored
// clusters, as a person opening it sees it: Chromium (headless) loads the
// page with a token in the tab's session, and the console marks the moment
// the first page of clusters is on screen (the page's script, the API's
// page of 50, the table drawn) in performance.now() terms, from the
// navigation's start. It returns that time, and the wall time from asking
// for the page until Go saw the rows. No Chromium: an error saying so.
func consoleFirstPage(base, token string) (page, wall time.Duration, err error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return 0, 0, errors.New("chromium not found: apt-get install chromium (or run without -console)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.IgnoreCertErrors, chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, consoleTimeout)
	defer cancel()
	// The browser starts, and the session gets its token, before the
	// measured navigation.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#/login"),
		chromedp.WaitVisible(chromedp.CSS("#login-user")),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](fmt.Sprintf(
				`sessionStorage.setItem('sc.user', 'admin'), sessionStorage.setItem('sc.token', %q), true`, token))(ctx, t)
			return err
		}),
	); err != nil {
		return 0, 0, fmt.Errorf("console: open the page: %w", err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/?fresh=1#/clusters"),
		chromedp.WaitVisible(chromedp.CSS(`#clusters tr[data-cluster]`)),
	); err != nil {
		return 0, 0, fmt.Errorf("console: the first page: %w", err)
	}
	wall = time.Since(start)
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.firstPageMs || ''`))
	if err != nil {
		return 0, 0, fmt.Errorf("console: read the mark: %w", err)
	}
	v, err := strconv.Atoi(ms)
	if err != nil {
		return 0, 0, fmt.Errorf("console: the page set no first-page mark (%q)", ms)
	}
	return time.Duration(v) * time.Millisecond, wall, nil
}
