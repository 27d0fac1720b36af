module pgarena.invalid/trivial

go 1.21
