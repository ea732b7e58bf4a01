from l40sbench.cli import run

run()
