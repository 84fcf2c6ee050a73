package policy

func checkClasses(p *Profile, r *decoder, at func(string) *node) {}
