package pgarena;

import java.beans.PropertyEditorSupport;
import java.util.regex.Pattern;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.InitBinder;

/**
 * Query parameters of type int/Integer accept only an optional minus sign and digits. Spring's default
 * String-to-Number conversion trims whitespace and takes "+7", " 7" and "0x10"; the contract wants those
 * answered 400 (an IllegalArgumentException here becomes a ServerWebInputException, mapped in {@link ApiExceptionHandler}).
 * A property editor registered for every request's data binder takes precedence over the conversion service.
 */
@ControllerAdvice
public class StrictIntegers {

    private static final Pattern INTEGER = Pattern.compile("-?[0-9]+");

    @InitBinder
    void strictIntegers(WebDataBinder binder) {
        binder.registerCustomEditor(int.class, new Editor());
        binder.registerCustomEditor(Integer.class, new Editor());
    }

    /** null for an empty value (as Spring's own converters: a required parameter then counts as missing). */
    static Integer parse(String text) {
        if (text == null || text.isEmpty()) {
            return null;
        }
        if (!INTEGER.matcher(text).matches()) {
            throw new IllegalArgumentException("not an integer: \"" + text + "\"");
        }
        return Integer.valueOf(text); // NumberFormatException (an IllegalArgumentException) on overflow
    }

    private static final class Editor extends PropertyEditorSupport {
        @Override
        public void setAsText(String text) {
            setValue(parse(text));
        }
    }
}
