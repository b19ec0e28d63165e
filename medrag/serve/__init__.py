"""The HTTP face of medrag: `medrag serve`, its API routes and the coders' page, over the CLI's functions."""
