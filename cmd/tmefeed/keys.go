package main

import (
	"fmt"
	"io"

	"github.com/tmefeed/tmefeed/access"
)

const keysUsage = `usage: tmefeed keys add NAME [rpm=N] [origin_rpm=N] [streams=N]

Mints an API key for the consumer NAME (1 to 64 letters, digits, '.', '_'
or '-'; it labels the consumer's logs and metrics). Line 1 is the key,
shown this once and stored nowhere; line 2 is its line for API_KEYS_FILE,
which holds only the key's hash:

  tmefeed keys add dash rpm=600 | tail -1 >> keys

The limits replace the server's for this consumer: rpm= RATE_LIMIT_RPM,
origin_rpm= CLIENT_ORIGIN_RPM, streams= STREAMS_PER_CLIENT. Send SIGHUP to
the server to have it read the file again.
`

// runKeys runs `tmefeed keys`.
func runKeys(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "add" || len(args) < 2 {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, keysUsage)
			return nil
		}
		fmt.Fprint(stderr, keysUsage)
		return errUsage
	}
	limits, err := access.ParseLimits(args[2:])
	if err != nil {
		return fmt.Errorf("keys add: %w", err)
	}
	key, line, err := access.NewKey(args[1], limits)
	if err != nil {
		return fmt.Errorf("keys add: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n%s\n", key, line)
	return err
}
